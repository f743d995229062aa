// FirstSanitizerReport (sanitizer_reports.h): each sanitizer's report is found and cut at its SUMMARY;
// ordinary output, including words a report also uses, is not a report.
#include "tests/support/sanitizer_reports.h"

#include <gtest/gtest.h>

#include <string>

namespace revkv::test_support {
namespace {

TEST(FirstSanitizerReport, OrdinaryServerOutputHoldsNoReport) {
  EXPECT_EQ(FirstSanitizerReport(""), "");
  EXPECT_EQ(FirstSanitizerReport("I serving etcd v3 gRPC on 127.0.0.1:2379\n"
                                 "W write failed: runtime error in the disk (not a sanitizer)\n"
                                 "SUMMARY: 3 keys\n"),
            "");
}

TEST(FirstSanitizerReport, AThreadSanitizerReportIsFoundFromItsOpeningToItsSummary) {
  const std::string log =
      "I serving\n"
      "==================\n"
      "WARNING: ThreadSanitizer: data race (pid=7)\n"
      "  Write of size 8 at 0x7b04 by thread T1:\n"
      "SUMMARY: ThreadSanitizer: data race server/rpc/call.h:55 in Finish\n"
      "==================\n"
      "I still serving\n";
  EXPECT_EQ(FirstSanitizerReport(log),
            "WARNING: ThreadSanitizer: data race (pid=7)\n"
            "  Write of size 8 at 0x7b04 by thread T1:\n"
            "SUMMARY: ThreadSanitizer: data race server/rpc/call.h:55 in Finish");
}

TEST(FirstSanitizerReport, AddressLeakAndUndefinedBehaviorReportsAreFound) {
  EXPECT_NE(FirstSanitizerReport("==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x6\n"), "");
  EXPECT_NE(FirstSanitizerReport("==1==ERROR: LeakSanitizer: detected memory leaks\n"), "");
  EXPECT_EQ(FirstSanitizerReport("x\nserver/store/tree.cc:12:7: runtime error: signed integer overflow\n"),
            "server/store/tree.cc:12:7: runtime error: signed integer overflow\n");
}

TEST(FirstSanitizerReport, AReportWithoutASummaryRunsToTheEndAndIsCutAtTheLimit) {
  const std::string log = "WARNING: ThreadSanitizer: data race\n" + std::string(100, 'x');
  EXPECT_EQ(FirstSanitizerReport(log), log);
  EXPECT_EQ(FirstSanitizerReport(log, 10), log.substr(0, 10));
}

}  // namespace
}  // namespace revkv::test_support
