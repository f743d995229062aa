// Sizes, durations, rates, bars, sparklines (clients/cli/text_format.h) and aligned tables
// (clients/cli/table.h).
#include "clients/cli/text_format.h"

#include <gtest/gtest.h>

#include "clients/cli/table.h"

namespace revkv::client {
namespace {

TEST(FormatBytes, UsesBinaryUnitsWithThreeFigures) {
  EXPECT_EQ(FormatBytes(0), "0B");
  EXPECT_EQ(FormatBytes(1023), "1023B");
  EXPECT_EQ(FormatBytes(1536), "1.50KiB");
  EXPECT_EQ(FormatBytes(12 * 1024 * 1024 + 300 * 1024), "12.3MiB");
  EXPECT_EQ(FormatBytes(1024 * 1024 - 1), "1.00MiB");  // not "1024KiB"
  EXPECT_EQ(FormatBytes(uint64_t{2} << 30), "2.00GiB");
}

TEST(FormatNanos, UsesTheLargestFittingUnit) {
  EXPECT_EQ(FormatNanos(0), "0");
  EXPECT_EQ(FormatNanos(850), "850ns");
  EXPECT_EQ(FormatNanos(12'345), "12.3us");
  EXPECT_EQ(FormatNanos(4'100'000), "4.10ms");
  EXPECT_EQ(FormatNanos(999'999), "1.00ms");
  EXPECT_EQ(FormatNanos(1'200'000'000), "1.20s");
}

TEST(FormatRate, KeepsThreeFiguresAndAbbreviatesLargeRates) {
  EXPECT_EQ(FormatRate(0), "0");
  EXPECT_EQ(FormatRate(-1), "0");
  EXPECT_EQ(FormatRate(0.5), "0.50");
  EXPECT_EQ(FormatRate(12.54), "12.5");
  EXPECT_EQ(FormatRate(1234.4), "1234");
  EXPECT_EQ(FormatRate(12'345), "12.3k");
  EXPECT_EQ(FormatRate(4'560'000), "4.56M");
}

TEST(Bar, FillsInEighthsAndPadsWithSpaces) {
  EXPECT_EQ(Bar(0, 4), "    ");
  EXPECT_EQ(Bar(0.5, 4), "██  ");
  EXPECT_EQ(Bar(1, 2), "██");
  EXPECT_EQ(Bar(7, 2), "██");  // clamped
  EXPECT_EQ(Bar(1.0 / 16, 2), "▏ ");
  EXPECT_EQ(DisplayWidth(Bar(0.37, 10)), 10u);
}

TEST(Sparkline, ScalesToTheLargestValue) {
  EXPECT_EQ(Sparkline({}), "");
  EXPECT_EQ(Sparkline({0, 0}), "▁▁");
  EXPECT_EQ(Sparkline({1, 8, 4}), "▂█▅");
  EXPECT_EQ(DisplayWidth(Sparkline({1, 2, 3, 4, 5})), 5u);
}

TEST(Table, AlignsColumnsAndRulesTheHeader) {
  Table table({"kind", "count"});
  table.AlignRight(1);
  table.AddRow({"minor", "12"});
  table.AddRow({"µ", "3"});
  EXPECT_EQ(table.Render(),
            "kind   count\n"
            "------------\n"
            "minor     12\n"
            "µ          3\n");
}

TEST(Table, WithoutAHeaderTrimsTrailingBlanks) {
  Table table;
  table.AddRow({"endpoint", "127.0.0.1:2379"});
  table.AddRow({"errors"});
  EXPECT_EQ(table.Render(),
            "endpoint  127.0.0.1:2379\n"
            "errors\n");
}

// etcdctl -w table's boxes (olekukonko/tablewriter): header centred, the odd space to the right.
TEST(Table, BoxedAsEtcdctlDrawsIt) {
  Table table({"KEY", "VERSION"});
  table.AlignRight(1);
  table.AddRow({"a", "1"});
  table.AddRow({"long-key", "12"});
  EXPECT_EQ(table.RenderBoxed(),
            "+----------+---------+\n"
            "|   KEY    | VERSION |\n"
            "+----------+---------+\n"
            "| a        |       1 |\n"
            "| long-key |      12 |\n"
            "+----------+---------+\n");
}

}  // namespace
}  // namespace revkv::client
