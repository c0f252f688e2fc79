// The DataLoader over MLPerf data files: order across files, the shuffle as
// a pure function of seed and epoch, resumption, read-ahead, background
// errors, the rank split of the global batch and evaluation padding.
#include "test/unit/MlperfDataTestUtil.h"

namespace {

using namespace ferry::test::mlperf;

// ---- DataLoader ------------------------------------------------------------

// A directory with an HDF5 file of 8 samples (tags 100..107) and a TFRecord
// file of 12 (tags 200..211): 20 samples in file order.
class Loader : public MlperfData {
protected:
  void SetUp() override {
    MlperfData::SetUp();
    fs::create_directory(at("data"));
    first = makeBatch(8, 100);
    second = makeBatch(12, 200);
    ferry::data::writeTfRecord(at("data/part-b.tfrecord"), second);
    ferry::data::writeHdf5(at("data/part-a.hdf5"), first);
    expected = rowsOf(first);
    for (const Row &row : rowsOf(second))
      expected.push_back(row);
  }

  std::string data() const { return at("data"); }

  // The file-order index of each row of `batch`, by its identity token.
  std::vector<int> order(const HostBatch &batch) const {
    std::vector<int> indices;
    for (int64_t r = 0; r < batch.samples; ++r) {
      int tag = batch.inputIds[r * batch.seq + 1];
      int index = tag < 200 ? tag - 100 : 8 + tag - 200;
      EXPECT_EQ(rowOf(batch, r), expected[index]) << "row " << r;
      indices.push_back(index);
    }
    return indices;
  }

  HostBatch first, second;
  std::vector<Row> expected; // file order
};

TEST_F(Loader, ReadsAcrossFilesInOrder) {
  DataLoader loader(data(), "auto", /*shuffle*/ false, 1, kShape);
  EXPECT_EQ(loader.samplesPerEpoch(), 20);
  EXPECT_EQ(loader.files(),
            (std::vector<std::string>{at("data/part-a.hdf5"),
                                      at("data/part-b.tfrecord")}));
  HostBatch out;
  loader.next(0, 20, out);
  EXPECT_EQ(rowsOf(out), expected);
  // Across the epoch boundary: samples 18, 19, then 0, 1, 2.
  loader.next(18, 5, out);
  EXPECT_EQ(order(out), (std::vector<int>{18, 19, 0, 1, 2}));
  loader.next(6, 4, out); // across the file boundary
  EXPECT_EQ(order(out), (std::vector<int>{6, 7, 8, 9}));
}

TEST_F(Loader, ShuffleIsAPureFunctionOfSeedAndEpoch) {
  DataLoader loader(data(), "auto", /*shuffle*/ true, 42, kShape);
  HostBatch out;
  loader.next(0, 20, out);
  std::vector<int> epoch0 = order(out);
  loader.next(20, 20, out);
  std::vector<int> epoch1 = order(out);

  // Every sample exactly once per epoch; the epochs differ.
  for (const std::vector<int> &epoch : {epoch0, epoch1}) {
    std::vector<int> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> all(20);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);
    EXPECT_NE(epoch, all);
  }
  EXPECT_NE(epoch0, epoch1);

  // The documented recipe, computed here.
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> permutation(20);
    std::iota(permutation.begin(), permutation.end(), 0);
    for (int i = 19; i > 0; --i) {
      uint32_t bits = ferry::random::randomBits(
          42, ferry::random::purposeHash("data.shuffle"), 0, epoch, i);
      std::swap(permutation[i], permutation[bits % (i + 1)]);
    }
    EXPECT_EQ(permutation, epoch == 0 ? epoch0 : epoch1) << "epoch " << epoch;
  }

  // The same seed gives the same order; another seed another.
  DataLoader same(data(), "auto", true, 42, kShape);
  same.next(0, 20, out);
  EXPECT_EQ(order(out), epoch0);
  DataLoader other(data(), "auto", true, 43, kShape);
  other.next(0, 20, out);
  EXPECT_NE(order(out), epoch0);
}

TEST_F(Loader, ResumesFromAPosition) {
  DataLoader original(data(), "auto", true, 7, kShape);
  std::vector<std::vector<Row>> batches;
  HostBatch out;
  for (int64_t position = 0; position < 48; position += 6) {
    original.next(position, 6, out);
    batches.push_back(rowsOf(out));
  }
  for (int64_t position : {18, 36, 42}) { // 18 spans epochs 0 and 1
    DataLoader resumed(data(), "auto", true, 7, kShape);
    resumed.next(position, 6, out);
    EXPECT_EQ(rowsOf(out), batches[position / 6]) << "position " << position;
  }
}

TEST_F(Loader, ReadAheadGivesWhatASynchronousReadGives) {
  DataLoader loader(data(), "auto", true, 9, kShape);
  DataLoader direct(data(), "auto", true, 9, kShape);
  HostBatch ahead, now;
  for (int64_t position = 0; position < 60; position += 6) {
    loader.next(position, 6, ahead); // from the read ahead after the first
    DataLoader fresh(data(), "auto", true, 9, kShape);
    fresh.next(position, 6, now); // synchronous
    EXPECT_EQ(rowsOf(ahead), rowsOf(now)) << "position " << position;
  }
  // Jumping elsewhere drops the read ahead.
  loader.next(3, 4, ahead);
  direct.next(3, 4, now);
  EXPECT_EQ(rowsOf(ahead), rowsOf(now));
  // readInOrder between two next() calls keeps the read ahead valid.
  loader.readInOrder(0, 2, 2, now);
  loader.next(7, 4, ahead);
  direct.next(7, 4, now);
  EXPECT_EQ(rowsOf(ahead), rowsOf(now));
}

TEST_F(Loader, BackgroundErrorsAreRethrown) {
  HostBatch batch = makeBatch(6, 300);
  ferry::data::writeTfRecord(at("bad.tfrecord"), batch);
  editRecord(at("bad.tfrecord"), 3, [](ferry::tf::Example &example) {
    featureOf(example, "input_ids").mutable_int64_list()->set_value(0, 5000);
  });
  DataLoader loader(at("bad.tfrecord"), "auto", false, 1, kShape);
  HostBatch out;
  loader.next(0, 2, out); // reads records 2 and 3 in the background
  EXPECT_EQ(rowsOf(out), (std::vector<Row>{rowOf(batch, 0), rowOf(batch, 1)}));
  EXPECT_THAT(errorOf([&] { loader.next(2, 2, out); }),
              HasSubstr(at("bad.tfrecord") + ": record 3: input_ids[0] is "
                                             "5000"));
  // The loader still works afterwards.
  loader.next(4, 2, out);
  EXPECT_EQ(rowsOf(out), (std::vector<Row>{rowOf(batch, 4), rowOf(batch, 5)}));
}

TEST_F(Loader, RanksSplitTheGlobalBatch) {
  for (bool shuffle : {false, true}) {
    DataLoader whole(data(), "auto", shuffle, 5, kShape, 0, 1);
    DataLoader rank0(data(), "auto", shuffle, 5, kShape, 0, 2);
    DataLoader rank1(data(), "auto", shuffle, 5, kShape, 1, 2);
    HostBatch all, half0, half1;
    for (int64_t position : {0, 16, 32}) { // 16 spans two epochs
      whole.next(position, 8, all);
      rank0.next(position, 8, half0);
      rank1.next(position, 8, half1);
      ASSERT_EQ(half0.samples, 4);
      ASSERT_EQ(half1.samples, 4);
      std::vector<Row> joined = rowsOf(half0);
      for (const Row &row : rowsOf(half1))
        joined.push_back(row);
      EXPECT_EQ(joined, rowsOf(all))
          << "position " << position << " shuffle " << shuffle;
    }
  }
  DataLoader rank0(data(), "auto", false, 5, kShape, 0, 2);
  HostBatch out;
  EXPECT_THROW(rank0.next(0, 7, out), std::invalid_argument);
  EXPECT_THROW(DataLoader(data(), "auto", false, 5, kShape, 2, 2),
               std::invalid_argument);
}

TEST_F(Loader, ReadInOrderPadsWithZeroRows) {
  DataLoader loader(data(), "auto", /*shuffle*/ true, 3, kShape);
  HostBatch out;
  loader.readInOrder(17, 3, 5, out);
  ASSERT_EQ(out.samples, 5);
  EXPECT_EQ(rowOf(out, 0), expected[17]);
  EXPECT_EQ(rowOf(out, 1), expected[18]);
  EXPECT_EQ(rowOf(out, 2), expected[19]);
  Row zero;
  zero.ids = zero.segments = zero.mask = std::vector<int32_t>(kShape.seq, 0);
  zero.positions = zero.maskedIds = std::vector<int32_t>(kShape.predictions, 0);
  zero.weights = std::vector<float>(kShape.predictions, 0.0f);
  EXPECT_EQ(rowOf(out, 3), zero);
  EXPECT_EQ(rowOf(out, 4), zero);
  EXPECT_EQ(out.nspWeights, (std::vector<float>{1, 1, 1, 0, 0}));

  EXPECT_EQ(errorOf([&] { loader.readInOrder(18, 3, 5, out); }),
            "data.path: samples [18, 21) requested but the files hold 20 "
            "samples");
  EXPECT_THROW(loader.readInOrder(0, 6, 5, out), std::invalid_argument);
}

TEST_F(Loader, ErrorsOfTheFilesSurface) {
  writeFile(at("data/zz-junk"), "not data");
  EXPECT_THAT(errorOf([&] { DataLoader(data(), "auto", false, 1, kShape); }),
              HasSubstr(at("data/zz-junk") + ": is neither"));
  SampleShape longer = kShape;
  longer.seq = 32;
  EXPECT_THAT(errorOf([&] {
                DataLoader(at("data/part-a.hdf5"), "auto", false, 1, longer);
              }),
              HasSubstr("has shape [8, 16]; the model expects [N, 32]"));
}

} // namespace
