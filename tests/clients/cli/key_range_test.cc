// Key ranges from etcdctl-style arguments (clients/cli/key_range.h).
#include "clients/cli/key_range.h"

#include <gtest/gtest.h>

namespace revkv::client {
namespace {

const std::string kNoBound(1, '\0');

TEST(PrefixEnd, IncrementsTheLastByteThatCanBeIncremented) {
  EXPECT_EQ(PrefixEnd("abc"), "abd");
  EXPECT_EQ(PrefixEnd("a\xff"), "b");
  EXPECT_EQ(PrefixEnd("\xff\xff"), kNoBound);
  EXPECT_EQ(PrefixEnd(""), kNoBound);
}

TEST(ResolveKeyRange, OneKeyARangeAPrefixOrFromAKey) {
  absl::StatusOr<KeyRange> one = ResolveKeyRange({.key = "k"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->key, "k");
  EXPECT_EQ(one->range_end, "");

  absl::StatusOr<KeyRange> range = ResolveKeyRange({.key = "a", .range_end = "c"});
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->range_end, "c");

  absl::StatusOr<KeyRange> prefix = ResolveKeyRange({.key = "dir/", .prefix = true});
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->key, "dir/");
  EXPECT_EQ(prefix->range_end, "dir0");

  absl::StatusOr<KeyRange> all = ResolveKeyRange({.key = "", .prefix = true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->key, kNoBound);
  EXPECT_EQ(all->range_end, kNoBound);

  absl::StatusOr<KeyRange> from = ResolveKeyRange({.key = "m", .from_key = true});
  ASSERT_TRUE(from.ok());
  EXPECT_EQ(from->key, "m");
  EXPECT_EQ(from->range_end, kNoBound);
}

TEST(ResolveKeyRange, RefusesTwoWaysOfSayingWhereTheRangeEnds) {
  EXPECT_FALSE(ResolveKeyRange({.key = "a", .range_end = "c", .prefix = true}).ok());
  EXPECT_FALSE(ResolveKeyRange({.key = "a", .prefix = true, .from_key = true}).ok());
  EXPECT_FALSE(ResolveKeyRange({.key = "a", .range_end = "c", .from_key = true}).ok());
}

}  // namespace
}  // namespace revkv::client
