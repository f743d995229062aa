// TLS on the gRPC port of a real revkv-server (--cert-file, --key-file, --trusted-ca-file,
// --client-cert-auth): a client that trusts the server's CA reads and writes; a plaintext client and a
// client that trusts another CA fail and write nothing; with client-certificate authentication, a client
// without a certificate, or with one from another CA, fails and one with a certificate from the trusted
// CA succeeds. The `revkv` CLI (--cacert, --cert, --key) and Debian's etcdctl 3.4 (--cacert, --cert,
// --key) connect the same way.
//
// The certificates are made when the tests run, with the `openssl` command (Debian package openssl):
// a CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and a second CA with its
// own client certificate that the server must not trust. P-256 keys, so making them takes milliseconds.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

using etcdserverpb::KV;

constexpr char kOpenssl[] = "/usr/bin/openssl";
// A call that cannot connect fails fast (UNAVAILABLE once the handshake fails); the deadline only bounds
// a hang.
constexpr std::chrono::seconds kRefusedCallTimeout{10};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The PEM files of one test run, made once for the whole binary.
class Certificates {
 public:
  // Makes them; false with `why` if an openssl command failed.
  bool Make(std::string* why) {
    const std::string& d = dir_.path();
    auto run = [&](const std::vector<std::string>& args) {
      std::vector<std::string> argv = {kOpenssl};
      argv.insert(argv.end(), args.begin(), args.end());
      const CommandResult r = RunCommand(argv, "", {}, std::chrono::seconds(30));
      if (r.exit_code != 0) *why += "openssl " + ::testing::PrintToString(args) + ": " + r.Describe() + "\n";
      return r.exit_code == 0;
    };
    const std::vector<std::string> ec_key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                             "-nodes"};
    auto make_ca = [&](const std::string& name) {
      std::vector<std::string> args = {"req", "-x509", "-new"};
      args.insert(args.end(), ec_key.begin(), ec_key.end());
      args.insert(args.end(),
                  {"-keyout", d + "/" + name + ".key", "-out", d + "/" + name + ".crt", "-days", "2", "-subj",
                   "/CN=revkv test " + name, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                   "keyUsage=critical,keyCertSign,cRLSign"});
      return run(args);
    };
    int serial = 0;
    auto make_leaf = [&](const std::string& name, const std::string& ca, const std::string& common_name,
                         const std::string& extensions) {
      std::ofstream(d + "/" + name + ".ext") << "basicConstraints=critical,CA:FALSE\n"
                                             << "keyUsage=critical,digitalSignature\n"
                                             << extensions;
      std::vector<std::string> request = {"req", "-new"};
      request.insert(request.end(), ec_key.begin(), ec_key.end());
      request.insert(request.end(), {"-keyout", d + "/" + name + ".key", "-out", d + "/" + name + ".csr",
                                     "-subj", "/CN=" + common_name});
      return run(request) &&
             run({"x509", "-req", "-in", d + "/" + name + ".csr", "-CA", d + "/" + ca + ".crt", "-CAkey",
                  d + "/" + ca + ".key", "-set_serial", std::to_string(++serial), "-days", "2", "-extfile",
                  d + "/" + name + ".ext", "-out", d + "/" + name + ".crt"});
    };
    return make_ca("ca") && make_ca("other-ca") &&
           make_leaf("server", "ca", "localhost",
                     "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n") &&
           make_leaf("client", "ca", "revkv-test-client", "extendedKeyUsage=clientAuth\n") &&
           make_leaf("other-client", "other-ca", "revkv-test-other-client", "extendedKeyUsage=clientAuth\n");
  }

  // The path of `<name>.crt` or `<name>.key`: ca, other-ca, server, client, other-client.
  std::string Path(const std::string& file) const { return dir_.path() + "/" + file; }
  std::string Pem(const std::string& file) const { return ReadFile(Path(file)); }

 private:
  TempDir dir_;
};

// The certificates, made on first use; null (with the reason in `why`) if that failed.
const Certificates* GetCertificates(std::string* why) {
  static std::string failure;
  static const Certificates* const certificates = [] {
    auto* c = new Certificates();
    if (c->Make(&failure)) return static_cast<const Certificates*>(c);
    delete c;
    return static_cast<const Certificates*>(nullptr);
  }();
  *why = failure;
  return certificates;
}

// Client credentials trusting `ca` (a file name of Certificates), with the client certificate
// `client` (and its key) when not empty.
std::shared_ptr<grpc::ChannelCredentials> TlsCredentials(const Certificates& certs, const std::string& ca,
                                                         const std::string& client = "") {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = certs.Pem(ca + ".crt");
  if (!client.empty()) {
    options.pem_cert_chain = certs.Pem(client + ".crt");
    options.pem_private_key = certs.Pem(client + ".key");
  }
  return grpc::SslCredentials(options);
}

grpc::Status PutWithTimeout(const std::shared_ptr<grpc::Channel>& channel, const std::string& key,
                            const std::string& value) {
  auto kv = KV::NewStub(channel);
  auto context = ContextWithDeadline(kRefusedCallTimeout);
  etcdserverpb::PutResponse response;
  return kv->Put(context.get(), PutOf(key, value), &response);
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    REVKV_NEED_TOOL(kOpenssl, "openssl");
    std::string why;
    certs_ = GetCertificates(&why);
    ASSERT_NE(certs_, nullptr) << why;
  }

  // Starts a TLS server; with client-certificate authentication when `client_auth`. The readiness check
  // connects with the right CA (and the client certificate, when one is required).
  void StartServer(bool client_auth) {
    ServerOptions options;
    options.extra_flags = {"--cert-file=" + certs_->Path("server.crt"),
                           "--key-file=" + certs_->Path("server.key")};
    if (client_auth) {
      options.extra_flags.push_back("--trusted-ca-file=" + certs_->Path("ca.crt"));
      options.extra_flags.push_back("--client-cert-auth");
    }
    options.channel_credentials = TlsCredentials(*certs_, "ca", client_auth ? "client" : "");
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
  }

  // The keys the server holds, read over a trusted channel.
  int64_t KeyCount() {
    auto kv = KV::NewStub(server_->NewChannel());
    auto reply = Call(kv.get(), &KV::Stub::Range, RangeOf(std::string(1, '\0'), std::string(1, '\0')));
    EXPECT_TRUE(IsOk(reply.status));
    return reply.response.count();
  }

  // Expects `status` to be a connection failure, not an answer from the server.
  static void ExpectRefused(const grpc::Status& status, const std::string& who) {
    EXPECT_FALSE(status.ok()) << who << " got an answer";
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << who << ": " << StatusText(status);
  }

  const Certificates* certs_ = nullptr;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(Tls, AClientThatTrustsTheServersCaWritesAndReads) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/false));
  auto kv = KV::NewStub(server_->NewChannel(TlsCredentials(*certs_, "ca")));
  auto put = Call(kv.get(), &KV::Stub::Put, PutOf("tls/key", "secret"));
  ASSERT_TRUE(IsOk(put.status));
  auto range = Call(kv.get(), &KV::Stub::Range, RangeOf("tls/key"));
  ASSERT_TRUE(IsOk(range.status));
  ASSERT_EQ(range.response.kvs_size(), 1);
  EXPECT_EQ(range.response.kvs(0).value(), "secret");
  EXPECT_EQ(range.response.kvs(0).mod_revision(), put.response.header().revision());
}

TEST_F(Tls, APlaintextClientIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/false));
  ExpectRefused(PutWithTimeout(server_->NewChannel(grpc::InsecureChannelCredentials()), "plain", "v"),
                "a plaintext client");
  EXPECT_EQ(KeyCount(), 0);
}

TEST_F(Tls, AClientThatTrustsAnotherCaIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/false));
  ExpectRefused(PutWithTimeout(server_->NewChannel(TlsCredentials(*certs_, "other-ca")), "wrong-ca", "v"),
                "a client trusting another CA");
  EXPECT_EQ(KeyCount(), 0);
}

TEST_F(Tls, WithClientCertAuthOnlyAClientWithATrustedCertificateGetsIn) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/true));
  ExpectRefused(PutWithTimeout(server_->NewChannel(TlsCredentials(*certs_, "ca")), "no-cert", "v"),
                "a client without a certificate");
  ExpectRefused(
      PutWithTimeout(server_->NewChannel(TlsCredentials(*certs_, "ca", "other-client")), "other-cert", "v"),
      "a client whose certificate comes from another CA");
  ExpectRefused(PutWithTimeout(server_->NewChannel(grpc::InsecureChannelCredentials()), "plain", "v"),
                "a plaintext client");
  EXPECT_EQ(KeyCount(), 0);

  auto kv = KV::NewStub(server_->NewChannel(TlsCredentials(*certs_, "ca", "client")));
  ASSERT_TRUE(IsOk(Call(kv.get(), &KV::Stub::Put, PutOf("tls/key", "mutual")).status));
  auto range = Call(kv.get(), &KV::Stub::Range, RangeOf("tls/key"));
  ASSERT_TRUE(IsOk(range.status));
  ASSERT_EQ(range.response.kvs_size(), 1);
  EXPECT_EQ(range.response.kvs(0).value(), "mutual");
}

TEST_F(Tls, TheRevkvCliConnectsWithCacertAndWithAClientCertificate) {
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/true));
  const std::string endpoint = "https://" + server_->address();
  auto revkv = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {REVKV_CLI_BINARY, "--endpoints", endpoint, "--dial-timeout", "3s"});
    return RunCommand(args, "", {}, std::chrono::seconds(30));
  };
  const std::vector<std::string> cert = {"--cert", certs_->Path("client.crt"), "--key",
                                         certs_->Path("client.key")};
  std::vector<std::string> put = {"--cacert", certs_->Path("ca.crt"), "put", "cli/key", "from-cli"};
  put.insert(put.end(), cert.begin(), cert.end());
  const CommandResult ok = revkv(put);
  EXPECT_EQ(ok.exit_code, 0) << ok.Describe();
  EXPECT_EQ(ok.out, "OK\n");
  std::vector<std::string> get = {"--cacert", certs_->Path("ca.crt"), "get", "cli/key"};
  get.insert(get.end(), cert.begin(), cert.end());
  const CommandResult got = revkv(get);
  EXPECT_EQ(got.exit_code, 0) << got.Describe();
  EXPECT_EQ(got.out, "from-cli\n");
  // Without the client certificate the server refuses the connection: exit status 1, nothing written.
  const CommandResult refused = revkv({"--cacert", certs_->Path("ca.crt"), "put", "cli/other", "v"});
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_EQ(KeyCount(), 1);
}

TEST_F(Tls, EtcdctlConnectsWithCacertAndWithAClientCertificate) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/true));
  auto etcdctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {kEtcdctl, "--endpoints=https://" + server_->address(), "--dial-timeout=3s",
                               "--command-timeout=15s", "--cacert=" + certs_->Path("ca.crt")});
    return RunCommand(args, "", {{"ETCDCTL_API", "3"}}, std::chrono::seconds(60));
  };
  const std::string cert = "--cert=" + certs_->Path("client.crt");
  const std::string key = "--key=" + certs_->Path("client.key");
  const CommandResult put = etcdctl({cert, key, "put", "etcdctl/key", "over-tls"});
  EXPECT_EQ(put.exit_code, 0) << put.Describe();
  EXPECT_EQ(put.out, "OK\n");
  const CommandResult get = etcdctl({cert, key, "get", "--print-value-only", "etcdctl/key"});
  EXPECT_EQ(get.exit_code, 0) << get.Describe();
  EXPECT_EQ(get.out, "over-tls\n");
  // --cacert only. etcdctl retries until its command timeout, so a short one.
  const CommandResult refused = etcdctl({"--command-timeout=3s", "put", "etcdctl/other", "v"});
  EXPECT_NE(refused.exit_code, 0) << refused.Describe();
  EXPECT_EQ(KeyCount(), 1);
}

TEST_F(Tls, EtcdctlWithOnlyCacertWorksWithoutClientCertAuth) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  ASSERT_NO_FATAL_FAILURE(StartServer(/*client_auth=*/false));
  const CommandResult r =
      RunCommand({kEtcdctl, "--endpoints=https://" + server_->address(), "--dial-timeout=3s",
                  "--command-timeout=15s", "--cacert=" + certs_->Path("ca.crt"), "endpoint", "health"},
                 "", {{"ETCDCTL_API", "3"}}, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE((r.out + r.err).find("is healthy"), std::string::npos)
      << r.Describe();  // etcdctl says it on stderr
}

}  // namespace
}  // namespace revkv::integration
