// The headers precompiled once per build and given to every revkv target (cmake/RevkvTarget.cmake,
// REVKV_PCH): standard and third-party headers only, the ones most sources include and that cost most
// to parse. Nothing of revkv's own: its macros must not change what these mean.
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "etcdserverpb/rpc.grpc.pb.h"
