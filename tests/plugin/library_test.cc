// What libzpp.so exports and links: exactly the intended symbols, and never libnccl.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "zpp/zpp.h"

namespace {

std::string Capture(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  pclose(pipe);
  return output;
}

// The dynamic symbols libzpp.so defines (text and data), as nm -D --defined-only lists them.
std::set<std::string> DefinedDynamicSymbols() {
  std::istringstream lines(Capture(std::string("nm -D --defined-only ") + ZPP_LIBRARY));
  std::set<std::string> names;
  std::string address, type, name;
  while (lines >> address >> type >> name) names.insert(name);
  return names;
}

TEST(LibraryTest, ExportsExactlyTheCApi) {
  const std::set<std::string> expected = {
      "zppGetVersion",       "zppGetStats",     "zppGetPassThroughReasonName",
      "zppStepEpochAdvance", "zppGetStepEpoch",
  };
  EXPECT_EQ(DefinedDynamicSymbols(), expected);
}

TEST(LibraryTest, DoesNotLinkNccl) {
  const std::string ldd = Capture(std::string("ldd ") + ZPP_LIBRARY);
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

}  // namespace
