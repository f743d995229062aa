// etcd's Auth service against a real revkv-server, with Debian's etcdctl and raw gRPC calls; the etcdctl
// case also against etcd 3.4 itself (its expectations are etcd's): users, roles, prefix permissions,
// `auth enable`, then KV, Watch and Lease calls refused for the wrong user and allowed for the right one;
// a revoked permission ending an open watch; the auth state across a restart and a snapshot restore.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

constexpr char kDenied[] = "etcdserver: permission denied";

class AuthEtcdctl : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override {
    REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
    if (!FlavorAvailable(GetParam())) REVKV_MISSING_TOOL() << FlavorName(GetParam()) << " is not installed";
    ServerOptions options;
    options.flavor = GetParam();
    if (GetParam() == Flavor::kRevkv) options.extra_flags = {"--bcrypt-cost=4"};
    server_ = std::make_unique<ServerProcess>(options);
    ASSERT_TRUE(server_->Start());
  }
  // etcdctl as `user` ("" for nobody).
  CommandResult As(const std::string& user, std::vector<std::string> args,
                   const std::string& stdin_text = "") {
    if (!user.empty()) args.insert(args.begin(), "--user=" + user);
    return Etcdctl(*server_, args, stdin_text, std::chrono::seconds(30));
  }
  std::string Ok(const std::string& user, const std::vector<std::string>& args,
                 const std::string& stdin_text = "") {
    const CommandResult r = As(user, args, stdin_text);
    EXPECT_EQ(r.exit_code, 0) << "etcdctl " << ::testing::PrintToString(args) << " as " << user << ": "
                              << r.Describe();
    return r.out;
  }
  // Expects etcdctl to fail with `message` on stderr.
  void Refused(const std::string& user, const std::vector<std::string>& args, const std::string& message) {
    const CommandResult r = As(user, args);
    EXPECT_NE(r.exit_code, 0) << ::testing::PrintToString(args) << " as " << user
                              << " succeeded: " << r.Describe();
    EXPECT_NE(r.err.find(message), std::string::npos) << ::testing::PrintToString(args) << " as " << user
                                                      << ": expected \"" << message << "\": " << r.Describe();
  }

  std::unique_ptr<ServerProcess> server_;
};

// The operator's procedure (docs/operations.md "Authentication"), then every KV, Watch and Lease call with
// the wrong user refused and with the right one allowed, with etcd's errors.
TEST_P(AuthEtcdctl, UsersRolesPrefixPermissionsAndEnable) {
  EXPECT_EQ(Ok("", {"user", "add", "root", "--new-user-password=rootpw"}), "User root created\n");
  EXPECT_EQ(Ok("", {"user", "add", "alice", "--new-user-password=alicepw"}), "User alice created\n");
  EXPECT_EQ(Ok("", {"user", "add", "bob", "--new-user-password=bobpw"}), "User bob created\n");
  EXPECT_EQ(Ok("", {"role", "add", "a"}), "Role a created\n");
  EXPECT_EQ(Ok("", {"role", "add", "b"}), "Role b created\n");
  EXPECT_EQ(Ok("", {"role", "grant-permission", "a", "readwrite", "a/", "--prefix"}), "Role a updated\n");
  EXPECT_EQ(Ok("", {"role", "grant-permission", "b", "readwrite", "b/", "--prefix"}), "Role b updated\n");
  EXPECT_EQ(Ok("", {"user", "grant-role", "alice", "a"}), "Role a is granted to user alice\n");
  EXPECT_EQ(Ok("", {"user", "grant-role", "bob", "b"}), "Role b is granted to user bob\n");
  Refused("", {"user", "add", "alice", "--new-user-password=x"}, "etcdserver: user name already exists");
  Refused("", {"role", "add", "a"}, "etcdserver: role name already exists");
  Refused("", {"user", "grant-role", "alice", "nope"}, "etcdserver: role name not found");
  EXPECT_EQ(Ok("", {"auth", "enable"}), "Authentication Enabled\n");  // etcdctl adds the root role

  const std::string root = "root:rootpw", alice = "alice:alicepw", bob = "bob:bobpw";
  // KV: alice under a/, bob under b/.
  EXPECT_EQ(Ok(alice, {"put", "a/1", "x"}), "OK\n");
  EXPECT_EQ(Ok(alice, {"get", "a/1"}), "a/1\nx\n");
  EXPECT_EQ(Ok(alice, {"get", "a/", "--prefix", "--keys-only"}), "a/1\n\n");
  EXPECT_EQ(Ok(bob, {"put", "b/1", "y"}), "OK\n");
  Refused(bob, {"get", "a/1"}, kDenied);
  Refused(bob, {"put", "a/1", "z"}, kDenied);
  Refused(bob, {"del", "a/1"}, kDenied);
  Refused(bob, {"get", "a/", "--prefix"}, kDenied);
  Refused(alice, {"get", "", "--from-key"}, kDenied);
  Refused("", {"get", "a/1"}, "etcdserver: user name is empty");
  Refused("alice:wrong", {"get", "a/1"}, "etcdserver: authentication failed, invalid user ID or password");
  Refused("nobody:pw", {"get", "a/1"}, "etcdserver: authentication failed, invalid user ID or password");
  EXPECT_EQ(Ok(alice, {"get", "a/1", "--print-value-only"}), "x\n");
  EXPECT_EQ(Ok(root, {"get", "b/1", "--print-value-only"}), "y\n");
  // A Txn is checked op by op, both branches and the compares.
  const CommandResult txn =
      As(alice, {"txn", "-i"}, "value(\"a/1\") = \"x\"\n\nput a/2 ok\n\nput b/2 no\n\n");
  EXPECT_NE(txn.err.find(kDenied), std::string::npos) << txn.Describe();
  EXPECT_NE(Ok(alice, {"txn", "-i"}, "value(\"a/1\") = \"x\"\n\nput a/2 ok\n\n\n").find("SUCCESS"),
            std::string::npos);
  EXPECT_EQ(Ok(root, {"get", "b/2"}), "");  // the refused Txn changed nothing

  // Watch: created for the right user, refused (canceled at once) for the wrong one.
  const CommandResult watch = As(bob, {"watch", "a/1"});
  EXPECT_NE(watch.exit_code, 0);
  EXPECT_NE((watch.out + watch.err).find(kDenied), std::string::npos) << watch.Describe();

  // Leases: alice attaches a/l to her lease; bob cannot revoke it (he may not write a/l).
  const std::string granted = Ok(alice, {"lease", "grant", "600"});
  ASSERT_EQ(granted.rfind("lease ", 0), 0u) << granted;
  const std::string lease = granted.substr(6, granted.find(' ', 6) - 6);
  EXPECT_EQ(Ok(alice, {"put", "a/l", "v", "--lease=" + lease}), "OK\n");
  Refused(bob, {"put", "b/l", "v", "--lease=" + lease}, kDenied);  // attaching to it: etcd's checkLeasePuts
  Refused(bob, {"lease", "revoke", lease}, kDenied);
  EXPECT_EQ(Ok(alice, {"lease", "keep-alive", "--once", lease}).rfind("lease ", 0), 0u);
  EXPECT_EQ(Ok(alice, {"lease", "revoke", lease}), "lease " + lease + " revoked\n");
  EXPECT_EQ(Ok(root, {"get", "a/l"}), "");

  // Administration: root only.
  EXPECT_EQ(Ok(root, {"user", "list"}), "alice\nbob\nroot\n");
  EXPECT_EQ(Ok(root, {"role", "list"}), "a\nb\nroot\n");
  Refused(alice, {"user", "list"}, kDenied);
  Refused(alice, {"role", "add", "c"}, kDenied);
  Refused(alice, {"user", "grant-role", "alice", "b"}, kDenied);
  EXPECT_NE(Ok(alice, {"user", "get", "alice"}).find("Roles: a"), std::string::npos);  // itself
  Refused(alice, {"user", "get", "bob"}, kDenied);
  EXPECT_NE(Ok(alice, {"role", "get", "a"}).find("[a/, a0) (prefix a/)"),
            std::string::npos);  // a role it has
  Refused(alice, {"role", "get", "b"}, kDenied);
  Refused(root, {"user", "delete", "root"}, "etcdserver: invalid auth management");
  Refused(root, {"user", "revoke-role", "root", "root"}, "etcdserver: invalid auth management");

  // A revoked permission refuses the next request; a new password invalidates the old one.
  EXPECT_EQ(Ok(root, {"role", "revoke-permission", "a", "a/", "--prefix"}),
            "Permission of range [a/, a0) is revoked from role a\n");
  Refused(alice, {"get", "a/1"}, kDenied);
  EXPECT_EQ(Ok(root, {"user", "passwd", "bob", "--interactive=false"}, "bobpw2\n"), "Password updated\n");
  Refused(bob, {"get", "b/1"}, "etcdserver: authentication failed, invalid user ID or password");
  EXPECT_EQ(Ok("bob:bobpw2", {"get", "b/1", "--print-value-only"}), "y\n");

  EXPECT_EQ(Ok(root, {"auth", "disable"}), "Authentication Disabled\n");
  EXPECT_EQ(Ok("", {"get", "a/1", "--print-value-only"}), "x\n");
  // With auth off, a client that still names a user is served (etcdctl's Authenticate answers "not
  // enabled" and it goes on without a token).
  EXPECT_EQ(Ok(alice, {"get", "b/1", "--print-value-only"}), "y\n");
}

// ----- revkv alone ------------------------------------------------------------------------------------

// A user, a role with read-write on a prefix, and auth enabled, set up with raw calls.
class AuthRevkv : public ::testing::Test {
 protected:
  void StartWith(std::vector<std::string> flags = {}) {
    ServerOptions options;
    options.extra_flags = std::move(flags);
    options.extra_flags.push_back("--bcrypt-cost=4");
    server_ = std::make_unique<ServerProcess>(options);
    target_ = server_.get();
    ASSERT_TRUE(server_->Start());
  }
  template <class Request, class Response>
  grpc::Status AuthCall(grpc::Status (etcdserverpb::Auth::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                         Response*),
                        const Request& request, const std::string& token = "", Response* response = nullptr) {
    auto stub = etcdserverpb::Auth::NewStub(target_->NewChannel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) context.AddMetadata("token", token);
    Response ignored;
    return (stub.get()->*method)(&context, request, response != nullptr ? response : &ignored);
  }
  // root, and `user` with read-write on `prefix`; auth enabled.
  void SetUpUser(const std::string& user, const std::string& prefix) {
    for (const std::string& name : {std::string("root"), user}) {
      etcdserverpb::AuthUserAddRequest add;
      add.set_name(name);
      add.set_password(name + "pw");
      ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::UserAdd, add)));
    }
    for (const std::string& role : {std::string("root"), user + "-role"}) {
      etcdserverpb::AuthRoleAddRequest add;
      add.set_name(role);
      ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::RoleAdd, add)));
    }
    etcdserverpb::AuthRoleGrantPermissionRequest perm;
    perm.set_name(user + "-role");
    perm.mutable_perm()->set_permtype(authpb::Permission::READWRITE);
    perm.mutable_perm()->set_key(prefix);
    perm.mutable_perm()->set_range_end(PrefixEnd(prefix));
    ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::RoleGrantPermission, perm)));
    for (const auto& [u, r] :
         std::vector<std::pair<std::string, std::string>>{{"root", "root"}, {user, user + "-role"}}) {
      etcdserverpb::AuthUserGrantRoleRequest grant;
      grant.set_user(u);
      grant.set_role(r);
      ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::UserGrantRole, grant)));
    }
    ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::AuthEnable, etcdserverpb::AuthEnableRequest())));
  }
  std::string Token(const std::string& user) {
    etcdserverpb::AuthenticateRequest r;
    r.set_name(user);
    r.set_password(user + "pw");
    etcdserverpb::AuthenticateResponse response;
    EXPECT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::Authenticate, r, "", &response)));
    return response.token();
  }
  grpc::Status Get(const std::string& key, const std::string& token) {
    auto kv = etcdserverpb::KV::NewStub(target_->NewChannel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) context.AddMetadata("token", token);
    etcdserverpb::RangeResponse response;
    return kv->Range(&context, RangeOf(key), &response);
  }

  std::unique_ptr<ServerProcess> server_;
  ServerProcess* target_ = nullptr;  // the server AuthCall, Token and Get speak to
};

// etcd checks a watch only when it is made; revkv also ends an open one whose permission is revoked, at
// once, with etcd's reason.
TEST_F(AuthRevkv, ARevokedPermissionEndsAnOpenWatch) {
  StartWith();
  SetUpUser("alice", "a/");
  const std::string alice = Token("alice");
  const std::string root = Token("root");
  auto watch = etcdserverpb::Watch::NewStub(server_->NewChannel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));  // a missing answer fails
  context.AddMetadata("token", alice);
  auto stream = watch->Watch(&context);
  etcdserverpb::WatchRequest create;
  create.mutable_create_request()->set_key("a/");
  create.mutable_create_request()->set_range_end(PrefixEnd("a/"));
  ASSERT_TRUE(stream->Write(create));
  etcdserverpb::WatchResponse r;
  ASSERT_TRUE(stream->Read(&r));
  ASSERT_TRUE(r.created() && !r.canceled()) << r.ShortDebugString();
  const int64_t id = r.watch_id();
  // An event while permitted.
  auto kv = etcdserverpb::KV::NewStub(server_->NewChannel());
  {
    grpc::ClientContext put_context;
    put_context.AddMetadata("token", alice);
    etcdserverpb::PutResponse put;
    ASSERT_TRUE(IsOk(kv->Put(&put_context, PutOf("a/1", "v"), &put)));
  }
  ASSERT_TRUE(stream->Read(&r));
  ASSERT_EQ(r.events_size(), 1) << r.ShortDebugString();
  // Revoked: the watcher is canceled.
  etcdserverpb::AuthRoleRevokePermissionRequest revoke;
  revoke.set_role("alice-role");
  revoke.set_key("a/");
  revoke.set_range_end(PrefixEnd("a/"));
  ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::RoleRevokePermission, revoke, root)));
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.watch_id(), id);
  EXPECT_TRUE(r.canceled()) << r.ShortDebugString();
  EXPECT_EQ(r.cancel_reason(), "rpc error: code = PermissionDenied desc = etcdserver: permission denied");
  EXPECT_EQ(r.events_size(), 0);
  // Later writes by root under a/ reach no one on this stream; a new watch there is refused.
  {
    grpc::ClientContext put_context;
    put_context.AddMetadata("token", root);
    etcdserverpb::PutResponse put;
    ASSERT_TRUE(IsOk(kv->Put(&put_context, PutOf("a/2", "secret"), &put)));
  }
  ASSERT_TRUE(stream->Write(create));
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_TRUE(r.created() && r.canceled() && r.watch_id() == -1) << r.ShortDebugString();
  EXPECT_EQ(r.events_size(), 0) << "an event of a/2 reached a watcher whose permission was revoked";
  context.TryCancel();
  (void)stream->Finish();
}

// Deleting a user takes effect on its next request, and its tokens go with it.
TEST_F(AuthRevkv, ADeletedUsersTokenNamesNobody) {
  StartWith();
  SetUpUser("alice", "a/");
  const std::string alice = Token("alice");
  const std::string root = Token("root");
  EXPECT_TRUE(IsOk(Get("a/1", alice)));
  etcdserverpb::AuthUserDeleteRequest del;
  del.set_name("alice");
  ASSERT_TRUE(IsOk(AuthCall(&etcdserverpb::Auth::Stub::UserDelete, del, root)));
  EXPECT_TRUE(
      HasStatus(Get("a/1", alice), grpc::StatusCode::UNAUTHENTICATED, "etcdserver: invalid auth token"));
}

// The auth state is logged and checkpointed: after a restart (from the log, then from a checkpoint) and
// in a restored snapshot, users, roles, permissions and the enabled flag are as they were; tokens are not
// (a restart invalidates them, as etcd's).
TEST_F(AuthRevkv, TheAuthStateSurvivesRestartsCheckpointsAndSnapshots) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  StartWith();
  SetUpUser("alice", "a/");
  const std::string before = Token("alice");
  auto check = [&](ServerProcess& server) {
    target_ = &server;
    const std::string alice = Token("alice");
    EXPECT_FALSE(alice.empty());
    EXPECT_TRUE(
        HasStatus(Get("a/1", before), grpc::StatusCode::UNAUTHENTICATED, "etcdserver: invalid auth token"));
    EXPECT_TRUE(IsOk(Get("a/1", alice)));
    EXPECT_TRUE(
        HasStatus(Get("b/1", alice), grpc::StatusCode::PERMISSION_DENIED, "etcdserver: permission denied"));
    EXPECT_TRUE(
        HasStatus(Get("a/1", ""), grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: user name is empty"));
    target_ = server_.get();
  };
  ASSERT_TRUE(server_->Stop());
  ASSERT_TRUE(server_->Start());
  check(*server_);
  // A checkpoint holds the auth state (its state record), then a restart from it.
  const std::string root = Token("root");
  {
    auto admin = ::revkv::v1::Admin::NewStub(server_->NewChannel());
    grpc::ClientContext context;
    context.AddMetadata("token", root);
    ::revkv::v1::CheckpointResponse response;
    ASSERT_TRUE(IsOk(admin->Checkpoint(&context, ::revkv::v1::CheckpointRequest(), &response)));
  }
  ASSERT_TRUE(server_->Kill());
  ASSERT_TRUE(server_->Start());
  check(*server_);
  // A snapshot (taken as root) restored elsewhere.
  TempDir scratch;
  const std::string file = scratch.path() + "/auth.db";
  const CommandResult saved = Etcdctl(*server_, {"--user=root:rootpw", "snapshot", "save", file});
  ASSERT_EQ(saved.exit_code, 0) << saved.Describe();
  ServerProcess restored;
  const CommandResult r =
      RunCommand({REVKV_SERVER_BINARY, "--restore-snapshot", file, "--data-dir", restored.data_dir()});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  ASSERT_TRUE(restored.Start());
  check(restored);
}

// With --client-cert-auth, a call that carries no token is the user its certificate's CommonName names,
// as in etcd (AuthInfoFromTLS); a token, when given, names the user instead.
TEST_F(AuthRevkv, TheClientCertificatesCommonNameIsTheUser) {
  constexpr char kOpenssl[] = "/usr/bin/openssl";
  REVKV_NEED_TOOL(kOpenssl, "openssl");
  TempDir certs;
  const std::string d = certs.path();
  auto openssl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), kOpenssl);
    const CommandResult r = RunCommand(args, "", {}, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.Describe();
    return r.exit_code == 0;
  };
  const std::vector<std::string> key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                        "-nodes"};
  std::vector<std::string> ca = {"req", "-x509", "-new"};
  ca.insert(ca.end(), key.begin(), key.end());
  ca.insert(ca.end(),
            {"-keyout", d + "/ca.key", "-out", d + "/ca.crt", "-days", "2", "-subj", "/CN=auth test ca",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"});
  ASSERT_TRUE(openssl(ca));
  int serial = 0;
  auto leaf = [&](const std::string& name, const std::string& cn, const std::string& ext) {
    std::ofstream(d + "/" + name + ".ext") << "basicConstraints=critical,CA:FALSE\n" << ext;
    std::vector<std::string> req = {"req", "-new"};
    req.insert(req.end(), key.begin(), key.end());
    req.insert(req.end(),
               {"-keyout", d + "/" + name + ".key", "-out", d + "/" + name + ".csr", "-subj", "/CN=" + cn});
    return openssl(req) &&
           openssl({"x509", "-req", "-in", d + "/" + name + ".csr", "-CA", d + "/ca.crt", "-CAkey",
                    d + "/ca.key", "-set_serial", std::to_string(++serial), "-days", "2", "-extfile",
                    d + "/" + name + ".ext", "-out", d + "/" + name + ".crt"});
  };
  ASSERT_TRUE(leaf("server", "localhost", "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n"));
  ASSERT_TRUE(leaf("root", "root", "extendedKeyUsage=clientAuth\n"));
  ASSERT_TRUE(leaf("alice", "alice", "extendedKeyUsage=clientAuth\n"));
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto credentials = [&](const std::string& client) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = read(d + "/ca.crt");
    o.pem_cert_chain = read(d + "/" + client + ".crt");
    o.pem_private_key = read(d + "/" + client + ".key");
    return grpc::SslCredentials(o);
  };
  ServerOptions options;
  options.extra_flags = {"--bcrypt-cost=4", "--cert-file=" + d + "/server.crt",
                         "--key-file=" + d + "/server.key", "--trusted-ca-file=" + d + "/ca.crt",
                         "--client-cert-auth"};
  options.channel_credentials = credentials("root");
  server_ = std::make_unique<ServerProcess>(options);
  target_ = server_.get();
  ASSERT_TRUE(server_->Start());
  SetUpUser("alice", "a/");  // as CN root: anyone may before auth is enabled, root after
  auto get_as = [&](const std::string& client, const std::string& k, const std::string& token = "") {
    auto kv = etcdserverpb::KV::NewStub(server_->NewChannel(credentials(client)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) context.AddMetadata("token", token);
    etcdserverpb::RangeResponse response;
    return kv->Range(&context, RangeOf(k), &response);
  };
  EXPECT_TRUE(IsOk(get_as("alice", "a/1")));
  EXPECT_TRUE(HasStatus(get_as("alice", "b/1"), grpc::StatusCode::PERMISSION_DENIED,
                        "etcdserver: permission denied"));
  EXPECT_TRUE(IsOk(get_as("root", "b/1")));
  // A token names its own user, whatever the certificate says.
  const std::string alice_token = Token("alice");
  EXPECT_TRUE(HasStatus(get_as("root", "b/1", alice_token), grpc::StatusCode::PERMISSION_DENIED,
                        "etcdserver: permission denied"));
  // Administration by certificate: root's may, alice's may not.
  etcdserverpb::AuthUserListResponse users;
  {
    auto auth = etcdserverpb::Auth::NewStub(server_->NewChannel(credentials("alice")));
    grpc::ClientContext context;
    EXPECT_TRUE(HasStatus(auth->UserList(&context, etcdserverpb::AuthUserListRequest(), &users),
                          grpc::StatusCode::PERMISSION_DENIED, "etcdserver: permission denied"));
  }
  EXPECT_TRUE(
      IsOk(AuthCall(&etcdserverpb::Auth::Stub::UserList, etcdserverpb::AuthUserListRequest(), "", &users)));
  EXPECT_EQ(users.users_size(), 2);
}

INSTANTIATE_TEST_SUITE_P(Servers, AuthEtcdctl, ::testing::Values(Flavor::kRevkv, Flavor::kEtcd),
                         [](const ::testing::TestParamInfo<Flavor>& p) { return FlavorName(p.param); });

}  // namespace
}  // namespace revkv::integration
