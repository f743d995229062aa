// The text of `gc stats` and `gc collect`: revkv's collector, heap, STM and store figures as tables.
#ifndef REVKV_CLIENTS_CLI_GC_REPORT_H_
#define REVKV_CLIENTS_CLI_GC_REPORT_H_

#include <string>

#include "revkv/v1/admin.pb.h"

namespace revkv::client {

// Every figure of `stats` in sections (collections, heap, STM, store), then its recent collections if
// it holds any. Lines end in '\n'.
std::string RenderGcStats(const revkv::v1::GetStatsResponse& stats);

// One line about one collection: "major collection #3: pause 4.10ms, ...".
std::string DescribeCollection(const revkv::v1::GcEvent& event);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_GC_REPORT_H_
