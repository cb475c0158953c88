// The WebGPU backend: set-up, memory, measurement and the ops that are one small kernel each.
#include "backend/webgpu/webgpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/webgpu/gpu_imports.h"
#include "backend/webgpu/wire.h"

namespace g4 {
namespace webgpu {
namespace {

// A read the host has queued (read_start); finished or cancelled once.
class GpuDownload final : public PendingDownload {
 public:
  GpuDownload(uint32_t ticket, size_t bytes) : ticket_(ticket), bytes_(bytes) {}
  ~GpuDownload() override {
    if (ticket_) g4_gpu_read_cancel(ticket_);
  }
  Status Finish(void* dst) override {
    if (!ticket_) return FailedPrecondition("webgpu: a download was finished twice");
    std::vector<uint8_t> tmp((bytes_ + 3) / 4 * 4);
    const uint32_t ok = g4_gpu_read_finish(ticket_, tmp.data(), static_cast<uint32_t>(tmp.size()));
    ticket_ = 0;
    if (!ok) return Internal("webgpu: reading back failed (device lost, or a kernel error the host reported)");
    if (bytes_) std::memcpy(dst, tmp.data(), bytes_);
    return Status::Ok();
  }

 private:
  uint32_t ticket_;
  size_t bytes_;
};

}  // namespace

Status WebGpuBackend::Init(uint64_t fill) {
  const std::string names = wire::kLayoutNames;
  g4_gpu_configure(wire::kLayout, static_cast<uint32_t>(std::size(wire::kLayout)), names.data(),
                   static_cast<uint32_t>(names.size()));
  cmds_.set_max_pending(static_cast<int>(std::min<uint32_t>(g4_gpu_submit_dispatches(), 1u << 16)));
  const uint32_t sg = g4_gpu_subgroup_size();
  subgroup_ = sg >= 4 && sg <= 32 && 32 % sg == 0 ? sg : 0;
  lib_.emplace(DeviceFeatures{subgroup_});
  const double limit = g4_gpu_max_binding_size();
  if (weight_binding_limit_ == 0 || weight_binding_limit_ > limit) weight_binding_limit_ = static_cast<uint64_t>(limit);
  G4_RETURN_IF_ERROR(arena_.Init(std::min<uint64_t>(arena_bytes_, static_cast<uint64_t>(limit))));
  if (fill == 0) {
    G4_ASSIGN_OR_RETURN(fill, Calibrate());
  }
  tuning_.fill = fill;
  tuning_.teams = 16 * fill;  // two workgroups of eight teams for each workgroup that fills
  const double storage = g4_gpu_workgroup_storage_size();
  tuning_.workgroup_bytes = static_cast<uint64_t>(storage);
  tuning_.stage_bytes = storage > static_cast<double>(kMatVecOwnWorkgroupBytes)
                            ? static_cast<uint64_t>(storage) - kMatVecOwnWorkgroupBytes
                            : 0;
  return Status::Ok();
}

Result<uint64_t> WebGpuBackend::Calibrate() {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> sink, Allocate(4));
  uint32_t iterations = 256;
  // Seconds for `groups` workgroups, the best of three (each dispatch read back on its own).
  auto seconds = [&](uint64_t groups) -> Result<double> {
    double best = 1e9;
    float out = 0.0f;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      Run<wgsl::Calibrate>({}, {iterations, At(F32{sink.get(), 0})}, groups);
      G4_RETURN_IF_ERROR(Download(*sink, 0, &out, 4));
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  G4_RETURN_IF_ERROR(seconds(1).status());  // compiles the kernel
  // A chain long enough that one workgroup's time stands well above a read's.
  double one = 0.0;
  for (;; iterations *= 2) {
    G4_ASSIGN_OR_RETURN(one, seconds(1));
    if (one >= 1e-3 || iterations >= (1u << 24)) break;
  }
  constexpr double kSame = 1.5;  // what still counts as the time of one
  constexpr uint64_t kMost = 1u << 16;
  uint64_t lo = 1, hi = 2;
  for (;; hi *= 2) {
    G4_ASSIGN_OR_RETURN(double t, seconds(hi));
    if (t > kSame * one || hi >= kMost) break;
    lo = hi;
  }
  while (hi - lo > std::max<uint64_t>(1, lo / 64)) {
    const uint64_t mid = lo + (hi - lo) / 2;
    G4_ASSIGN_OR_RETURN(double t, seconds(mid));
    (t > kSame * one ? hi : lo) = mid;
  }
  return lo;
}

std::string WebGpuBackend::Describe() const {
  return "webgpu (fill " + std::to_string(tuning_.fill) + " workgroups, subgroups " +
         (subgroup_ ? std::to_string(subgroup_) : std::string("none")) + ")";
}

// --- memory

Result<std::unique_ptr<Buffer>> WebGpuBackend::Allocate(size_t bytes) {
  const std::optional<uint64_t> off = arena_.Take(bytes);
  if (!off) {
    return ResourceExhausted("webgpu: the activation arena (" + std::to_string(arena_.bytes() >> 20) +
                             " MiB) has no room for " + std::to_string(bytes) + " bytes");
  }
  auto b = std::make_unique<ArenaBuffer>(bytes, *off, &arena_);
  Fill(F32{b.get(), 0}, Arena::Rounded(bytes) / 4, 0.0f);  // zero-filled, as the interface promises
  return std::unique_ptr<Buffer>(std::move(b));
}

Result<std::unique_ptr<Buffer>> WebGpuBackend::Owned(Result<std::unique_ptr<Buffer>> b) {
  if (b.ok()) static_cast<WeightBuffer*>(b->get())->set_before_destroy(hand_over_);
  return b;
}

Result<std::unique_ptr<Buffer>> WebGpuBackend::LoadWeights(const Reader& source, uint64_t offset, uint64_t size) {
  return Owned(UploadWeights(source, offset, size, weight_binding_limit_));
}

Result<std::unique_ptr<Buffer>> WebGpuBackend::LoadQuantizedWeights(DType type, uint64_t elements,
                                                                    const Reader& values, uint64_t values_offset,
                                                                    const Reader& scales, uint64_t scales_offset) {
  return Owned(UploadQuantized(type, elements, values, values_offset, scales, scales_offset, weight_binding_limit_));
}

Status WebGpuBackend::Upload(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  cmds_.Submit();
  if (offset > dst.bytes() || bytes > dst.bytes() - offset) return OutOfRange("webgpu: upload past the buffer");
  std::vector<uint8_t> tmp((bytes + 3) / 4 * 4, 0);  // writeBuffer takes multiples of 4 bytes
  std::memcpy(tmp.data(), src, bytes);
  g4_gpu_write_buffer(arena_.id(), static_cast<double>(Offset(dst) + offset), tmp.data(),
                      static_cast<uint32_t>(tmp.size()));
  return Status::Ok();
}

Status WebGpuBackend::Download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<PendingDownload> read, StartDownload(src, offset, bytes));
  return read->Finish(dst);
}

Result<std::unique_ptr<PendingDownload>> WebGpuBackend::StartDownload(const Buffer& src, size_t offset, size_t bytes) {
  if (offset > src.bytes() || bytes > src.bytes() - offset) return OutOfRange("webgpu: download past the buffer");
  if (!error_.ok()) return error_;
  // The recorded commands go with the read: its copy rides in their last submit.
  const uint32_t size = static_cast<uint32_t>((bytes + 3) / 4 * 4);
  const auto words = cmds_.words();
  const uint32_t ticket = g4_gpu_read_start(words.data(), static_cast<uint32_t>(words.size()), arena_.id(),
                                            static_cast<double>(Offset(src) + offset), size);
  cmds_.Handed();
  if (!ticket) return Internal("webgpu: reading back failed to start (device lost)");
  return std::unique_ptr<PendingDownload>(new GpuDownload(ticket, bytes));
}

// --- measurement

double WebGpuBackend::HostHandOverMs() const { return g4_gpu_host_ms(); }

void WebGpuBackend::LeaveOut(const std::vector<std::string>& prefixes) {
  left_out_ = prefixes;
  left_out_by_id_.clear();
}

bool WebGpuBackend::LeftOut(uint32_t id) {
  if (id >= left_out_by_id_.size()) left_out_by_id_.resize(id + 1, -1);
  if (left_out_by_id_[id] < 0) {
    const std::string& label = lib_->Label(id);
    left_out_by_id_[id] = std::any_of(left_out_.begin(), left_out_.end(),
                                      [&](const std::string& p) { return label.rfind(p, 0) == 0; });
  }
  return left_out_by_id_[id] == 1;
}

void WebGpuBackend::Profile(ProfileMode mode) {
  cmds_.Submit();
  g4_gpu_profile(static_cast<uint32_t>(mode));
}

Result<std::string> WebGpuBackend::ProfileJson() {
  cmds_.Submit();
  std::string text(1 << 16, '\0');
  const uint32_t n = g4_gpu_profile_read(text.data(), static_cast<uint32_t>(text.size()));
  if (n == 0) return Internal("webgpu: the kernel profile does not fit in 64 KiB");
  text.resize(n);
  return text;
}

// Best of 5 submits, each reading a zero-filled buffer of `bytes` 4 times, with tuning_.fill * 8
// workgroups (enough loads in flight to reach the device's bandwidth).
Result<double> WebGpuBackend::MeasureReadBandwidth(uint64_t bytes) {
  bytes = std::min<uint64_t>(bytes, weight_binding_limit_) / 16 * 16;
  const uint32_t buf = g4_gpu_create_buffer(static_cast<double>(bytes), 1);
  if (!buf) return ResourceExhausted("webgpu: cannot allocate " + std::to_string(bytes >> 20) + " MiB to measure bandwidth");
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> sink, Allocate(4));
  WeightBuffer w(bytes, {buf}, bytes);  // destroys buf when done
  const Weight weight{&w, DType::kF32, 1, 1, static_cast<int64_t>(bytes / 4)};
  double best = 0.0;
  float out = 0.0f;
  for (int pass = 0; pass < 6; ++pass) {
    G4_RETURN_IF_ERROR(Download(*sink, 0, &out, 4));  // the queue is idle
    const auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 4; ++rep) {
      Run<wgsl::Bandwidth>({}, {static_cast<uint32_t>(bytes / 16), At(F32{sink.get(), 0})}, tuning_.fill * 8, {&weight});
    }
    G4_RETURN_IF_ERROR(Download(*sink, 0, &out, 4));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass > 0) best = std::max(best, 4.0 * static_cast<double>(bytes) / s / 1e9);  // the first pass compiles
  }
  return best;
}

// --- helpers

F32 WebGpuBackend::HostIds(std::span<const int32_t> ids) {
  std::vector<float> f(ids.begin(), ids.end());
  for (int32_t id : ids) {
    if (id < 0 || id >= (1 << 24)) {
      Fail(Unimplemented("webgpu: row id " + std::to_string(id) + " is not below 2^24"));
      f.assign(f.size(), 0.0f);
      break;
    }
  }
  return F32{nullptr, cmds_.HostWords(f.data(), f.size())};
}

std::pair<uint32_t, uint32_t> WebGpuBackend::RopeTables(std::span<const float> inv_freq,
                                                        std::span<const int64_t> positions) {
  // One array (the positions table: the shift's place and the positions, padded to whole vec4s;
  // then the frequencies' bits): host words taken one after the other could see the region start
  // again between them (CommandList).
  const size_t at = (positions.size() + 4) / 4 * 4;
  std::vector<uint32_t> words(at + inv_freq.size(), 0);
  words[0] = ShiftPlace();
  for (size_t i = 0; i < positions.size(); ++i) words[1 + i] = static_cast<uint32_t>(positions[i]);
  std::memcpy(words.data() + at, inv_freq.data(), inv_freq.size() * 4);
  const uint32_t p = cmds_.HostWords(words.data(), words.size());
  return {p, p + static_cast<uint32_t>(at)};
}

void WebGpuBackend::Elementwise(uint32_t op, size_t count, F32 out, F32 a, F32 b, float s) {
  RunThreads<wgsl::Elementwise>({}, {op, static_cast<uint32_t>(count), At(out), At(a), At(b), s}, count);
}

// A thread an oct; the row length goes in the kernel's `b`.
void WebGpuBackend::RoundOcts(F32 x, int rows, int dim) {
  const size_t octs = static_cast<size_t>(rows) * ((dim + 7) / 8);
  RunThreads<wgsl::Elementwise>({}, {5, static_cast<uint32_t>(octs), At(x), At(x), static_cast<uint32_t>(dim), 0.0f},
                                octs);
}

// --- small ops
// Host ids go to the host region as floats and take the same kernels as ids on the device.

void WebGpuBackend::Embed(F32 out, const Weight& table, std::span<const int32_t> ids, float scale) {
  EmbedIds(out, table, HostIds(ids), static_cast<int>(ids.size()), scale);
}

void WebGpuBackend::EmbedIds(F32 out, const Weight& table, F32 ids, int rows, float scale) {
  RunThreads<wgsl::EmbedIds>({}, {At(out), At(ids), static_cast<uint32_t>(rows), static_cast<uint32_t>(table.cols), scale},
                             static_cast<uint64_t>(rows) * table.cols, {&table});
}

void WebGpuBackend::RmsNorm(F32 out, F32 in, const Weight& weight, int rows, int dim, float eps) {
  wgsl::RmsNormParams p;
  p.dst = At(out);
  p.src = At(in);
  p.rows = rows;
  p.dim = dim;
  p.eps = eps;
  p.weighted = weight.present();
  Run<wgsl::RmsNorm>({}, p, rows, {&weight});
}

void WebGpuBackend::AddRmsNorm(F32 x, F32 in, const Weight& weight, int rows, int dim, float eps, float scale) {
  wgsl::RmsNormParams p;
  p.dst = At(x);
  p.src = At(in);
  p.rows = rows;
  p.dim = dim;
  p.eps = eps;
  p.weighted = weight.present();
  p.mode = 1;
  p.scale = scale;
  Run<wgsl::RmsNorm>({}, p, rows, {&weight});
}

wgsl::RmsNormParams WebGpuBackend::JoinParams(const ResidualAdd& a, int rows, int dim) {
  wgsl::RmsNormParams p;
  p.dst = At(a.x_out);
  p.src = At(a.delta);
  p.rows = rows;
  p.dim = dim;
  p.eps = a.eps;
  p.weighted = a.norm.present();
  p.mode = 2;
  p.scale = a.scale;
  p.residual = At(a.x_in);
  return p;
}

void WebGpuBackend::AddRmsNormTo(const ResidualAdd& a, int rows, int dim) {
  Run<wgsl::RmsNorm>({}, JoinParams(a, rows, dim), rows, {&a.norm});
}

void WebGpuBackend::NormRope(F32 x, int rows, int heads, const Weight& norm, float eps, std::span<const float> inv_freq,
                             std::span<const int64_t> positions) {
  const auto [pp, fp] = RopeTables(inv_freq, positions);
  Run<wgsl::NormRope>({}, {At(x), static_cast<uint32_t>(rows), static_cast<uint32_t>(heads),
                           static_cast<uint32_t>(inv_freq.size()), pp, fp, eps},
                      static_cast<uint64_t>(rows) * heads, {&norm});
}

void WebGpuBackend::Rope(F32 x, int rows, int heads, std::span<const float> inv_freq,
                         std::span<const int64_t> positions) {
  const auto [pp, fp] = RopeTables(inv_freq, positions);
  RunThreads<wgsl::Rope>({}, {At(x), static_cast<uint32_t>(rows), static_cast<uint32_t>(heads),
                              static_cast<uint32_t>(inv_freq.size()), pp, fp},
                         static_cast<uint64_t>(rows) * heads * inv_freq.size());
}

void WebGpuBackend::GeluMul(F32 out, F32 gate, F32 up, int rows, int cols, int up_stride) {
  // Four columns a thread where rows are whole vec4s.
  const bool vec = cols % 4 == 0 && up_stride % 4 == 0 && At(out) % 4 == 0 && At(gate) % 4 == 0 && At(up) % 4 == 0;
  wgsl::GeluMulVariant v;
  v.vec = vec;
  RunThreads<wgsl::GeluMul>(v, {At(out), At(gate), At(up), static_cast<uint32_t>(rows), static_cast<uint32_t>(cols),
                                static_cast<uint32_t>(up_stride)},
                            static_cast<uint64_t>(rows) * cols / (vec ? 4 : 1));
}

void WebGpuBackend::Argmax(F32 ids, F32 x, int rows, int cols) {
  // Rows of a whole vocabulary: slices in parallel, then one pick a row.
  const uint64_t chunks = std::min<uint64_t>((cols + 4095) / 4096, 256);
  wgsl::ArgmaxParams p{At(ids), At(x), static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), 0, 1, 0};
  if (chunks > 1 && rows * chunks * 8 <= Arena::kSplitBytes) {
    p.phase = 1;
    p.chunks = static_cast<uint32_t>(chunks);
    p.parts = static_cast<uint32_t>(arena_.split_base() / 4);
    Run<wgsl::Argmax>({}, p, rows * chunks);
    p.phase = 2;
  }
  Run<wgsl::Argmax>({}, p, rows);
}

void WebGpuBackend::TopK(F32 indices, F32 x, int rows, int cols, int k) {
  // Rows that fit workgroup memory are sorted whole, cheaper than picking one at a time.
  const wgsl::TopkParams p{At(indices), At(x), static_cast<uint32_t>(rows), static_cast<uint32_t>(cols),
                           static_cast<uint32_t>(k)};
  if (cols <= 2048) {
    Run<wgsl::TopkSort>({}, {p.indices, p.x, p.rows, p.cols, p.k}, rows);
  } else {
    Run<wgsl::Topk>({}, p, rows);
  }
}

void WebGpuBackend::TopKValues(F32 out, F32 x, int cols, int k) {
  // Slices of up to 2048 columns (fewer slices when k is large: blocks * k candidates, and a
  // slice's columns, must fit the kernel's 64 a thread).
  constexpr uint64_t kHeld = 64 * 256;
  const uint64_t blocks = std::max<uint64_t>(1, std::min<uint64_t>((cols + 2047) / 2048, kHeld / k));
  if ((cols + blocks - 1) / blocks > kHeld || blocks * k * 8 > Arena::kSplitBytes) {
    return Fail(InvalidArgument("webgpu: top-k of " + std::to_string(k) + " over " + std::to_string(cols) +
                                " columns is past the kernel's limits"));
  }
  wgsl::TopkValuesParams p{At(out), At(x), static_cast<uint32_t>(cols), static_cast<uint32_t>(k), 1,
                           static_cast<uint32_t>(blocks), static_cast<uint32_t>(arena_.split_base() / 4)};
  Run<wgsl::TopkValues>({}, p, blocks);
  p.phase = 2;
  Run<wgsl::TopkValues>({}, p, 1);
}

void WebGpuBackend::ArgmaxKeyed(F32 id, F32 x, F32 keys, int cols) {
  Run<wgsl::ArgmaxKeyed>({}, {At(id), At(x), At(keys), static_cast<uint32_t>(cols)}, 1);
}

void WebGpuBackend::AcceptDrafts(F32 result, F32 drafts, F32 target, int k) {
  Run<wgsl::Accept>({}, {At(result), At(drafts), At(target), static_cast<uint32_t>(k)}, 1);
}

void WebGpuBackend::MoeRoute(F32 indices, F32 weights, F32 logits_scratch, F32 normed_scratch, F32 x,
                             const Weight& scale, const Weight& proj, const Weight& per_expert_scale,
                             const MoeShape& s, float eps) {
  // The logits as any normed product (every row's input read once per expert, spread over the
  // device), then a workgroup a row for the softmax and the top k of a few hundred experts.
  NormMatMul(logits_scratch, normed_scratch, x, scale, eps, proj, s.rows, {});
  Run<wgsl::MoeRoute>({}, {At(indices), At(weights), At(logits_scratch), static_cast<uint32_t>(s.rows),
                           static_cast<uint32_t>(s.experts), static_cast<uint32_t>(s.top_k),
                           1.0f / std::sqrt(static_cast<float>(s.hidden))},
                      s.rows, {&per_expert_scale});
}

void WebGpuBackend::MoeExperts(F32 out, F32 act_scratch, F32 x, const Weight& gate_up, const Weight& down,
                               F32 indices, F32 weights, const MoeShape& s) {
  // Two passes, a team of 32 threads an output (eight a workgroup), each with one weight in W1
  // (which may then span bindings): the activations h, then the down projections' weighted sum.
  wgsl::MoeExpertsParams p{At(act_scratch), At(x), At(indices), At(weights), static_cast<uint32_t>(s.rows),
                           static_cast<uint32_t>(s.hidden), static_cast<uint32_t>(s.top_k),
                           static_cast<uint32_t>(s.expert_width)};
  wgsl::MoeExpertsVariant v;
  v.up = true;
  v.vec = s.hidden % 8 == 0 && At(x) % 4 == 0;
  const uint64_t acts = static_cast<uint64_t>(s.rows) * s.top_k * s.expert_width;
  Run<wgsl::MoeExperts>(v, p, (acts + 7) / 8, {&gate_up});
  p.dst = At(out);
  p.x = At(act_scratch);
  v.up = false;
  v.vec = s.expert_width % 8 == 0 && At(act_scratch) % 4 == 0;
  Run<wgsl::MoeExperts>(v, p, (static_cast<uint64_t>(s.rows) * s.hidden + 7) / 8, {&down});
}

}  // namespace webgpu

double WebGpuMaxBindingBytes() { return g4_gpu_max_binding_size(); }

Result<std::unique_ptr<Backend>> MakeWebGpuBackend(uint64_t arena_bytes, uint64_t weight_binding_limit,
                                                   uint64_t fill) {
  auto be = std::make_unique<webgpu::WebGpuBackend>(arena_bytes, weight_binding_limit);
  G4_RETURN_IF_ERROR(be->Init(fill));
  return std::unique_ptr<Backend>(std::move(be));
}

}  // namespace g4
