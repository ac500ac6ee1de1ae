// src/common/enum_names.h: names from one list, unknown values named `unknown`, and the
// completeness check a C enumeration's table is held to.
#include "common/enum_names.h"

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "plan/plan.h"

namespace zpp {
namespace {

#define TEST_COLOURS(X) X(kRed, "red") X(kGreen, "green") X(kBlue, "blue")
enum class Colour { TEST_COLOURS(ZPP_ENUMERATOR) };
constexpr std::string_view kColourNames[] = {TEST_COLOURS(ZPP_ENUM_NAME)};

TEST(EnumNamesTest, ListGivesEachValueItsName) {
  EXPECT_EQ(NameIn(kColourNames, Colour::kRed, "?"), "red");
  EXPECT_EQ(NameIn(kColourNames, Colour::kBlue, "?"), "blue");
  EXPECT_EQ(std::size(kColourNames), static_cast<size_t>(Colour::kBlue) + 1);
}

TEST(EnumNamesTest, ValueOutsideTheListIsUnknown) {
  EXPECT_EQ(NameIn(kColourNames, static_cast<Colour>(3), "?"), "?");
  EXPECT_EQ(NameIn(kColourNames, -1, "?"), "?");
  EXPECT_EQ(NameIn(kColourNames, 2, "?"), "blue");
}

TEST(EnumNamesTest, TableFindsItsRowsOnly) {
  constexpr NamedValue<int> kTable[] = {{7, "seven"}, {3, "three"}};
  EXPECT_EQ(NameIn(kTable, 3, "?"), "three");
  EXPECT_EQ(NameIn(kTable, 4, "?"), "?");
}

TEST(EnumNamesTest, NamesEachOnceWantsEveryValueExactlyOnce) {
  constexpr NamedValue<int> kComplete[] = {{1, "b"}, {0, "a"}, {2, "c"}};
  constexpr NamedValue<int> kRepeated[] = {{0, "a"}, {0, "b"}, {2, "c"}};
  constexpr NamedValue<int> kShort[] = {{0, "a"}, {1, "b"}};
  static_assert(NamesEachOnce(kComplete, 3));
  static_assert(!NamesEachOnce(kRepeated, 3));
  static_assert(!NamesEachOnce(kShort, 3));
  static_assert(!NamesEachOnce(kComplete, 4));
}

TEST(EnumNamesTest, ZppListsNameEveryValue) {
  EXPECT_STREQ(GroupKindName(GroupKind::kInterRack), "inter-rack");
  EXPECT_EQ(plan::PlanKindName(plan::PlanKind::kQarFlatAllReduce), "qar-flat-allreduce");
  EXPECT_EQ(plan::PlanKindName(static_cast<plan::PlanKind>(99)), "?");
}

}  // namespace
}  // namespace zpp
