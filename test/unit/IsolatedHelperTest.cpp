// The crash-isolating helper process (training/data/IsolatedHelper.h): a
// check that finishes or throws answers nothing, one that crashes is named
// by its signal, and the next request gets a new helper.
#include "training/data/IsolatedHelper.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <string>

namespace {

void checkByRequest(const std::string &request) {
  if (request == "segv")
    std::raise(SIGSEGV);
  if (request == "abort")
    std::abort();
  if (request == "exit")
    _exit(3);
  if (request == "throw")
    throw std::runtime_error("a data error the caller meets again itself");
}

TEST(IsolatedHelper, FinishedAndThrowingChecksAnswerNothing) {
  ferry::data::IsolatedHelper helper(checkByRequest);
  EXPECT_EQ(helper.run("fine"), std::nullopt);
  EXPECT_EQ(helper.run("throw"), std::nullopt);
  EXPECT_EQ(helper.run(std::string(100000, 'x')), std::nullopt);
}

TEST(IsolatedHelper, ACrashIsNamedAndTheNextRequestGetsANewHelper) {
  ferry::data::IsolatedHelper helper(checkByRequest);
  EXPECT_EQ(helper.run("fine"), std::nullopt);
  EXPECT_EQ(helper.run("segv"), std::optional<std::string>("Segmentation fault"));
  EXPECT_EQ(helper.run("fine"), std::nullopt);
  EXPECT_EQ(helper.run("abort"), std::optional<std::string>("Aborted"));
  EXPECT_EQ(helper.run("exit"), std::optional<std::string>("exit code 3"));
  EXPECT_EQ(helper.run("fine"), std::nullopt);
}

TEST(IsolatedHelper, ManyRequestsOutliveTheHelpersRestart) {
  // The helper is replaced every 10000 requests; answers go on across it.
  ferry::data::IsolatedHelper helper(checkByRequest);
  for (int i = 0; i < 10010; ++i)
    ASSERT_EQ(helper.run("fine"), std::nullopt) << "request " << i;
}

} // namespace
