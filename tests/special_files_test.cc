// Files that are not what their names promise: a FIFO or a device where a config, weights or
// tokenizer file belongs, a file too large for its kind, a file that cannot be read, and memory
// running out. Each is one clear error naming the file, at once: no hang, no abort.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "io/reader.h"
#include "model/model.h"
#include "tests/test_util.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // a limit on address space stops the sanitizer's own mappings
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// A copy of the dense test model's config and weights.
std::string DenseCopy() {
  const std::string dir = test::MakeTempDir();
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(test::TestData(std::string("models/dense/") + f), dir + "/" + f);
  }
  return dir;
}

// The CLI under `timeout`: a run that blocks fails the test in seconds instead of hanging it.
test::CliRun CliWithin(int seconds, const std::string& args) {
  return test::Shell("timeout " + std::to_string(seconds) + " " + G4_CLI + " " + args);
}

void ExpectFails(const test::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
}

TEST(SpecialFiles, FifoInPlaceOfAModelFileIsRefusedAtOnce) {
  for (const char* name : {"config.json", "model.safetensors", "generation_config.json"}) {
    const std::string dir = DenseCopy();
    fs::remove(dir + "/" + name);
    ASSERT_EQ(mkfifo((dir + "/" + name).c_str(), 0644), 0);
    ExpectFails(CliWithin(10, "inspect --model " + dir), dir + "/" + name + ": not a regular file (a FIFO)");
    fs::remove_all(dir);
  }
  // A shard index that is a FIFO.
  const std::string dir = DenseCopy();
  ASSERT_EQ(mkfifo((dir + "/model.safetensors.index.json").c_str(), 0644), 0);
  ExpectFails(CliWithin(10, "inspect --model " + dir), "model.safetensors.index.json: not a regular file (a FIFO)");
  fs::remove_all(dir);
}

TEST(SpecialFiles, FifoAsTokenizerIsRefusedAtOnce) {
  const std::string dir = DenseCopy();
  ASSERT_EQ(mkfifo((dir + "/tokenizer.json").c_str(), 0644), 0);
  // Beside the model (generate looks for it) and named with --tokenizer.
  ExpectFails(CliWithin(10, "generate --model " + dir + " --prompt-ids 2,105 --max-new-tokens 1"),
              dir + "/tokenizer.json: not a regular file (a FIFO)");
  ExpectFails(CliWithin(10, "tokenize --tokenizer " + dir + "/tokenizer.json --text hi"),
              dir + "/tokenizer.json: not a regular file (a FIFO)");
  auto t = Tokenizer::Load(dir + "/tokenizer.json");
  ASSERT_FALSE(t.ok());
  fs::remove_all(dir);
}

TEST(SpecialFiles, DevicesAndDirectoriesAreNamed) {
  const std::string dir = DenseCopy();
  fs::remove(dir + "/config.json");
  fs::create_symlink("/dev/zero", dir + "/config.json");
  // Before these checks a device was read until memory ran out; the limit turns that into an
  // abort within seconds instead of filling the machine.
  const std::string limit = kSanitized ? "" : "ulimit -v 4000000; ";
  test::CliRun r = test::Shell(limit + "timeout 20 " + G4_CLI + " inspect --model " + dir);
  ExpectFails(r, dir + "/config.json: not a regular file (a character device)");
  fs::remove(dir + "/config.json");
  fs::copy_file(test::TestData("models/dense/config.json"), dir + "/config.json");
  fs::remove(dir + "/model.safetensors");
  fs::create_directory(dir + "/model.safetensors");
  auto be = MakeCpuBackend();
  auto m = Model::Load(dir, *be);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(dir + "/model.safetensors: not a regular file (a directory)"), std::string::npos)
      << m.status().message();
  fs::remove_all(dir);
}

TEST(SpecialFiles, TextFromADeviceStopsAtTheLimit) {
  const std::string limit = kSanitized ? "" : "ulimit -v 4000000; ";
  test::CliRun r = test::Shell(limit + "timeout 60 " + G4_CLI + " tokenize --tokenizer " + G4_GEMMA_TOKENIZER +
                               " --text-file /dev/zero");
  ExpectFails(r, "/dev/zero: larger than 256 MiB");
  // A pipe is still text to encode.
  r = test::Shell("printf '<bos>Hi' | " + std::string(G4_CLI) + " tokenize --tokenizer " + G4_GEMMA_TOKENIZER +
                  " --text-file /dev/stdin");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, 2), "2,") << r.out;
}

TEST(SpecialFiles, FilesLargerThanTheirKindAreRefused) {
  // A valid config.json padded past any real one's size.
  const std::string dir = DenseCopy();
  std::string text = test::ReadFile(dir + "/config.json");
  text.append(kMaxConfigBytes, ' ');
  test::WriteFile(dir + "/config.json", text);
  auto be = MakeCpuBackend();
  auto m = Model::Load(dir, *be);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(dir + "/config.json: larger than 16 MiB"), std::string::npos)
      << m.status().message();
  fs::remove_all(dir);
  auto exact = ReadTextFile(G4_GEMMA_TOKENIZER, fs::file_size(G4_GEMMA_TOKENIZER));
  EXPECT_TRUE(exact.ok());
  auto over = ReadTextFile(G4_GEMMA_TOKENIZER, fs::file_size(G4_GEMMA_TOKENIZER) - 1);
  EXPECT_FALSE(over.ok());
}

// Runs the CLI as an unprivileged user (root reads files whatever their mode), returning its
// exit code and output.
test::CliRun CliAsNobody(const std::string& args) {
  int fds[2];
  if (pipe(fds) != 0) return {-2, "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(99);
    const std::string cmd = std::string(G4_CLI) + " " + args;
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(98);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(SpecialFiles, UnreadableWeightsSayPermissionDenied) {
  const std::string dir = DenseCopy();
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir + "/model.safetensors", fs::perms::none);
  test::CliRun r = CliAsNobody("inspect --model " + dir);
  ASSERT_NE(r.code, 99) << "cannot drop privileges to run as nobody";
  ExpectFails(r, dir + "/model.safetensors: cannot open (Permission denied)");
  // The same for the config.
  fs::permissions(dir + "/model.safetensors", fs::perms::owner_read | fs::perms::others_read);
  fs::permissions(dir + "/config.json", fs::perms::none);
  ExpectFails(CliAsNobody("inspect --model " + dir), dir + "/config.json: cannot open (Permission denied)");
  fs::remove_all(dir);
}

TEST(SpecialFiles, RunningOutOfMemoryIsAnErrorNotAnAbort) {
  if (kSanitized) GTEST_SKIP() << "the sanitizer's mappings need the address space this test limits";
  // The CLI starts in under 15 MB of address space; the Gemma tokenizer needs over 100 MB to load.
  test::CliRun r = test::Shell("ulimit -v 64000; " + std::string(G4_CLI) + " tokenize --tokenizer " +
                               G4_GEMMA_TOKENIZER + " --text hello");
  ExpectFails(r, "gemma4: out of memory");
  EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace g4
