// libFuzzer target: the MLPerf HDF5 sample reader (datasets, shapes, types,
// values), through Debian's libhdf5.
//
// After each input every HDF5 object ferry opened must be closed again
// (H5Fget_obj_count), so ferry's own handle hygiene is checked exactly. What
// is left, memory libhdf5 1.10 loses on its own error paths for some damaged
// files, ferry cannot prevent by checking the file first: it is suppressed
// for this target alone (hdf5-leaks.supp) and recorded, with reproducers, in
// docs/reliability.md.
#include "test/fuzz/SampleFileFuzzer.h"

#include <hdf5.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".hdf5");
  ferry::fuzz::readSampleFile(data, size, path, ferry::data::openHdf5);
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0)
    __builtin_trap(); // ferry left an HDF5 file, dataset, type or space open
  return 0;
}
