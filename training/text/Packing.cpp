// Shortest-pack-first histogram packing (Packing.h).
#include "training/text/Packing.h"

#include <algorithm>
#include <deque>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ferry::text {

std::vector<PackStrategy> packHistogram(const std::vector<int64_t> &histogram,
                                        int64_t seq, int64_t maxPerPack) {
  if (seq < 1 || maxPerPack < 1 ||
      static_cast<int64_t>(histogram.size()) != seq + 1)
    throw std::invalid_argument(
        "packHistogram: a histogram of seq + 1 entries, seq and the "
        "sequences per pack at least 1");
  // open[r]: strategies with r tokens of room that take another sequence.
  std::vector<std::vector<PackStrategy>> open(static_cast<size_t>(seq + 1));
  std::vector<PackStrategy> full;
  auto place = [&](PackStrategy s) {
    int64_t used =
        std::accumulate(s.lengths.begin(), s.lengths.end(), int64_t{0});
    int64_t room = seq - used;
    if (room == 0 || static_cast<int64_t>(s.lengths.size()) >= maxPerPack)
      full.push_back(std::move(s));
    else
      open[static_cast<size_t>(room)].push_back(std::move(s));
  };
  for (int64_t length = seq; length >= 1; --length) {
    int64_t left = histogram[static_cast<size_t>(length)];
    while (left > 0) {
      // The shortest open pack: the most room (it fits when that is at
      // least the length).
      int64_t room = seq;
      while (room >= length && open[static_cast<size_t>(room)].empty())
        --room;
      if (room < length) {
        // No pack fits: new packs, as few as will hold the rest when the
        // next rounds fill them with sequences of this length too.
        int64_t perPack = std::min(maxPerPack, seq / length);
        int64_t fresh = (left + perPack - 1) / perPack;
        place(PackStrategy{{length}, fresh});
        left -= fresh;
        continue;
      }
      std::vector<PackStrategy> &packs = open[static_cast<size_t>(room)];
      PackStrategy s = std::move(packs.back());
      packs.pop_back();
      int64_t taken = std::min(s.count, left);
      if (s.count > taken)
        packs.push_back(PackStrategy{s.lengths, s.count - taken});
      s.lengths.push_back(length);
      s.count = taken;
      place(std::move(s));
      left -= taken;
    }
  }
  for (std::vector<PackStrategy> &packs : open)
    for (PackStrategy &s : packs)
      full.push_back(std::move(s));
  return full;
}

std::vector<std::vector<int64_t>>
packSamples(const std::vector<int64_t> &lengths, int64_t seq,
            int64_t maxPerPack) {
  std::vector<int64_t> histogram(static_cast<size_t>(seq + 1), 0);
  std::vector<std::deque<int64_t>> byLength(static_cast<size_t>(seq + 1));
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 1 || lengths[i] > seq)
      throw std::invalid_argument("packSamples: sample " + std::to_string(i) +
                                  " has length " + std::to_string(lengths[i]) +
                                  ", outside 1.." + std::to_string(seq));
    histogram[static_cast<size_t>(lengths[i])] += 1;
    byLength[static_cast<size_t>(lengths[i])].push_back(
        static_cast<int64_t>(i));
  }
  std::vector<std::vector<int64_t>> rows;
  for (const PackStrategy &s : packHistogram(histogram, seq, maxPerPack))
    for (int64_t r = 0; r < s.count; ++r) {
      std::vector<int64_t> row;
      for (int64_t length : s.lengths) {
        std::deque<int64_t> &queue = byLength[static_cast<size_t>(length)];
        row.push_back(queue.front());
        queue.pop_front();
      }
      rows.push_back(std::move(row));
    }
  return rows;
}

} // namespace ferry::text
