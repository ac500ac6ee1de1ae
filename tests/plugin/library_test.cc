// What libzpp.so exports and links: exactly the intended symbols, and never libnccl.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "tests/common/run_command.h"
#include "zpp/zpp.h"

namespace {

// The dynamic symbols libzpp.so defines (text and data), as nm -D --defined-only lists them.
std::set<std::string> DefinedDynamicSymbols() {
  std::istringstream lines(
      zpp::test::RunCommand(std::string("nm -D --defined-only ") + ZPP_LIBRARY).output);
  std::set<std::string> names;
  std::string address, type, name;
  while (lines >> address >> type >> name) names.insert(name);
  return names;
}

TEST(LibraryTest, ExportsExactlyTheCApiAndTheHooks) {
  const std::set<std::string> expected = {
      // zpp's C API
      "zppGetVersion", "zppGetStats", "zppGetCommStats", "zppGetPassThroughReasonName",
      "zppStepEpochAdvance", "zppGetStepEpoch", "zppSetTrainingPass", "zppGetTrainingPass",
      "zppHpzChecks", "zppHpzStepSkipped",
      // the NCCL calls zpp intercepts
      "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll", "ncclCommInitRankScalable",
      "ncclCommSplit", "ncclCommShrink", "ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort",
      "ncclCommRevoke", "ncclCommGetAsyncError", "ncclGroupStart", "ncclGroupEnd",
      "ncclGroupSimulateEnd", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclAllGather",
      "ncclReduceScatter", "ncclAllReduce"};
  EXPECT_EQ(DefinedDynamicSymbols(), expected);
}

TEST(LibraryTest, DoesNotLinkNccl) {
  const std::string ldd = zpp::test::RunCommand(std::string("ldd ") + ZPP_LIBRARY).output;
  ASSERT_THAT(ldd, ::testing::HasSubstr("libc.so"));  // ldd ran
  EXPECT_THAT(ldd, ::testing::Not(::testing::HasSubstr("libnccl")));
  EXPECT_THAT(ldd, ::testing::Not(::testing::HasSubstr("libcudart")));
}

TEST(LibraryTest, LoadsWithDlopenAndAnswers) {
  void* handle = dlopen(ZPP_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using GetVersion = ncclResult_t (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "zppGetVersion"));
  ASSERT_NE(get_version, nullptr);
  int version = 0;
  EXPECT_EQ(get_version(&version), ncclSuccess);
  EXPECT_EQ(version, ZPP_VERSION_CODE);
  EXPECT_EQ(dlsym(handle, "_ZN3zpp9GetConfigEv"), nullptr);  // internals stay hidden
  dlclose(handle);
}

// No libnccl in this process and no ZPP_NCCL_LIBRARY: an intercepted call fails cleanly, with a
// WARN that says what to do, and never crashes.
TEST(LibraryTest, WithoutARealNcclCallsFailWithAWarning) {
  void* handle = dlopen(ZPP_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using AllGather =
      ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  auto all_gather = reinterpret_cast<AllGather>(dlsym(handle, "ncclAllGather"));
  ASSERT_NE(all_gather, nullptr);
  float data[4] = {};
  ::testing::internal::CaptureStderr();
  const ncclResult_t first = all_gather(data, data, 4, ncclFloat32, nullptr, nullptr);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(first, ncclSystemError);
  EXPECT_THAT(log, ::testing::HasSubstr("no NCCL found"));
  EXPECT_THAT(log, ::testing::HasSubstr("ZPP_NCCL_LIBRARY"));
  EXPECT_EQ(ncclGroupStart(), ncclSystemError);  // and every later call, without a crash
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError);
  dlclose(handle);
}

}  // namespace
