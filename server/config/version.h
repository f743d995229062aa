// The one version string revkv reports: `revkv-server --version`, Maintenance/Status, Admin/ServerInfo,
// GET /version on the ops port and the revkv_build_info metric all show kServerVersion.
//
// etcd clients read the version as an etcd server version and some compare it (">= 3.4.0" before using
// an API). So it is etcd's version whose API revkv speaks, with revkv's own version as semver build
// metadata: "3.4.0+revkv.0.1.0". Build metadata does not take part in semver precedence, so it compares
// equal to 3.4.0 (a pre-release such as "3.4.0-revkv" would sort below 3.4.0 and fail those checks).
#pragma once

#include <string_view>

#ifndef REVKV_VERSION
#error "REVKV_VERSION (the project version, e.g. \"0.1.0\") is defined by server/config/CMakeLists.txt"
#endif

namespace revkv::server {

// The etcd version whose v3 API revkv serves (what etcd calls its cluster version: major.minor.0).
inline constexpr std::string_view kEtcdApiVersion = "3.4.0";
// revkv's own version (CMake's PROJECT_VERSION).
inline constexpr std::string_view kRevkvVersion = REVKV_VERSION;
// What every client sees: "<etcd API version>+revkv.<revkv version>".
inline constexpr std::string_view kServerVersion = "3.4.0+revkv." REVKV_VERSION;

}  // namespace revkv::server
