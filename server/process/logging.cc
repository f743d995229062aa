// The server's log: formats and routing (logging.h).
#include "server/process/logging.h"

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "runtime/port/diagnostics.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

// The pattern flag %* : the message, escaped for a JSON string.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    std::string escaped;
    AppendJsonEscaped(std::string_view(msg.payload.data(), msg.payload.size()), escaped);
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

std::unique_ptr<spdlog::formatter> MakeFormatter(LogFormat format) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  if (format == LogFormat::kJson) {
    // Every field but msg is spdlog's own text, which needs no escaping (level and logger names are ours).
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","logger":"%n","thread":%t,"msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e %L [%t] %v");
  }
  return formatter;
}

spdlog::level::level_enum SpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kFatal:
      return spdlog::level::critical;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger>& GrpcLogger() {
  static auto* logger = new std::shared_ptr<spdlog::logger>();  // never destroyed: gRPC may log at exit
  return *logger;
}

std::shared_ptr<spdlog::logger>& ProtobufLogger() {
  static auto* logger = new std::shared_ptr<spdlog::logger>();
  return *logger;
}

// gRPC's messages: "<file>:<line>: <message>" at the matching level.
void ForwardGrpcLog(gpr_log_func_args* args) {
  const std::shared_ptr<spdlog::logger>& logger = GrpcLogger();
  if (logger == nullptr) return;
  spdlog::level::level_enum level = spdlog::level::info;
  switch (args->severity) {
    case GPR_LOG_SEVERITY_DEBUG:
      level = spdlog::level::debug;
      break;
    case GPR_LOG_SEVERITY_INFO:
      level = spdlog::level::info;
      break;
    case GPR_LOG_SEVERITY_ERROR:
      level = spdlog::level::err;
      break;
  }
  logger->log(level, "{}:{}: {}", args->file != nullptr ? args->file : "?", args->line,
              args->message != nullptr ? args->message : "");
}

void ForwardProtobufLog(google::protobuf::LogLevel severity, const char* file, int line,
                        const std::string& message) {
  const std::shared_ptr<spdlog::logger>& logger = ProtobufLogger();
  if (logger == nullptr) return;
  spdlog::level::level_enum level = spdlog::level::err;
  if (severity == google::protobuf::LOGLEVEL_INFO) level = spdlog::level::info;
  if (severity == google::protobuf::LOGLEVEL_WARNING) level = spdlog::level::warn;
  logger->log(level, "{}:{}: {}", file != nullptr ? file : "?", line, message);
}

// The runtime's and the lowest layers' warnings and fatal errors (runtime/port/diagnostics.h): through
// the "revkv" logger, so in the log's format. A fatal message is flushed before the process aborts.
void ForwardDiagnostic(runtime::port::DiagnosticSeverity severity, const char* message) {
  const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger();
  if (severity == runtime::port::DiagnosticSeverity::kFatal) {
    logger->critical("{}", message);
    logger->flush();
  } else {
    logger->warn("{}", message);
  }
}

// std::terminate (an exception nothing caught, a noexcept function that threw, a joinable std::thread
// destroyed) as one flushed critical line naming the exception, then an abort as the default handler's.
[[noreturn]] void LogTermination() {
  std::string what = "std::terminate called";
  if (const std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      what += " after an uncaught exception: ";
      what += e.what();
    } catch (...) {
      what += " after an uncaught exception not derived from std::exception";
    }
  }
  if (const std::shared_ptr<spdlog::logger> logger = spdlog::default_logger()) {
    logger->critical("{}", what);
    logger->flush();
  }
  std::abort();
}

}  // namespace

void AppendJsonEscaped(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = bytes[i];
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || c == 0x7f) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: kept if it is well-formed UTF-8 (no overlong forms, no surrogates, at most
    // U+10FFFF), else its first byte becomes U+FFFD and the rest is looked at again.
    size_t length = 0;
    uint32_t min = 0;
    uint32_t code = 0;
    if ((c & 0xe0) == 0xc0) {
      length = 2, min = 0x80, code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      length = 3, min = 0x800, code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      length = 4, min = 0x10000, code = c & 0x07;
    }
    bool valid = length != 0 && i + length <= n;
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (bytes[i + k] & 0xc0) == 0x80;
      code = (code << 6) | (bytes[i + k] & 0x3f);
    }
    valid = valid && code >= min && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    if (valid) {
      out.append(text.data() + i, length);
      i += length;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
}

void SetUpLogging(LogLevel level, LogFormat format) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_formatter(MakeFormatter(format));
  const spdlog::level::level_enum spd_level = SpdlogLevel(level);
  auto make = [&](const char* name) {
    auto logger = std::make_shared<spdlog::logger>(name, sink);
    logger->set_level(spd_level);
    return logger;
  };
  spdlog::set_default_logger(make("revkv"));
  GrpcLogger() = make("grpc");
  ProtobufLogger() = make("protobuf");

  gpr_set_log_function(ForwardGrpcLog);
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {  // NOLINT(concurrency-mt-unsafe): main, before threads
    gpr_set_log_verbosity(level == LogLevel::kTrace   ? GPR_LOG_SEVERITY_DEBUG
                          : level == LogLevel::kDebug ? GPR_LOG_SEVERITY_INFO
                                                      : GPR_LOG_SEVERITY_ERROR);
  }
  google::protobuf::SetLogHandler(ForwardProtobufLog);
  runtime::port::SetDiagnosticSink(ForwardDiagnostic);
  std::set_terminate(LogTermination);
}

}  // namespace revkv::server
