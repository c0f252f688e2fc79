// Atomic writes: the new content replaces the old whole, and a failed write
// leaves the old file and no temporary behind.
#include "runtime/AtomicFile.h"
#include "test/unit/TestFiles.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using ferry::test::readFile;

int countEntries(const std::string &dir) {
  int n = 0;
  DIR *d = opendir(dir.c_str());
  while (dirent *e = readdir(d))
    n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  closedir(d);
  return n;
}

class AtomicFile : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/ferry-atomic-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string dir;
};

} // namespace

TEST_F(AtomicFile, WritesAndReplaces) {
  std::string path = dir + "/out.mlir";
  ASSERT_EQ(ferry::writeFileAtomically(path, "first"), std::nullopt);
  EXPECT_EQ(readFile(path), "first");
  std::string big(1 << 20, 'x');
  ASSERT_EQ(ferry::writeFileAtomically(path, big), std::nullopt);
  EXPECT_EQ(readFile(path), big);
  EXPECT_EQ(countEntries(dir), 1) << "a temporary file was left behind";
}

TEST_F(AtomicFile, KeepsTheModeOfTheFileItReplaces) {
  std::string path = dir + "/private.txt";
  ASSERT_EQ(ferry::writeFileAtomically(path, "a"), std::nullopt);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ASSERT_EQ(ferry::writeFileAtomically(path, "b"), std::nullopt);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(readFile(path), "b");
}

TEST_F(AtomicFile, NewFilesFollowTheUmask) {
  mode_t old = umask(027);
  std::string path = dir + "/new.txt";
  std::optional<std::string> error = ferry::writeFileAtomically(path, "x");
  umask(old);
  ASSERT_EQ(error, std::nullopt);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(AtomicFile, MissingDirectoriesAreCreated) {
  std::string path = dir + "/no/such/dir/out.mlir";
  ASSERT_EQ(ferry::writeFileAtomically(path, "x"), std::nullopt);
  std::ifstream in(path);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "x");
}

TEST_F(AtomicFile, AnUncreatableDirectoryIsAClearError) {
  std::ofstream(dir + "/file") << "a file, not a directory";
  std::string path = dir + "/file/sub/out.mlir";
  std::optional<std::string> error = ferry::writeFileAtomically(path, "x");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, path + ": cannot create its directory " + dir +
                        "/file/sub (Not a directory); choose a path whose "
                        "directories can be made");
}

TEST_F(AtomicFile, FailedRenameKeepsTheOldTargetAndNoTemporary) {
  // The target is a non-empty directory: rename fails after the data is
  // written, and nothing may be left behind.
  std::string target = dir + "/target";
  ASSERT_EQ(mkdir(target.c_str(), 0755), 0);
  std::ofstream(target + "/keep") << "old";
  std::optional<std::string> error = ferry::writeFileAtomically(target, "new");
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("cannot rename the temporary file into place"),
            std::string::npos)
      << *error;
  EXPECT_EQ(readFile(target + "/keep"), "old");
  EXPECT_EQ(countEntries(dir), 1) << "a temporary file was left behind";
}
