#include "convert/export.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/quant.h"
#include "io/checkpoint.h"
#include "model/assistant.h"
#include "model/model.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// Files copied beside the weights when the source has them.
const char* kSideFiles[] = {"config.json",           "generation_config.json", "tokenizer.json",
                            "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
                            "chat_template.json",    "tokenizer.model"};

bool IsFloat(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

Status Interrupted() { return FailedPrecondition("export: interrupted"); }

bool Cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(std::memory_order_relaxed); }

// Stored floats as float32.
void DecodeFloats(DType dtype, const uint8_t* raw, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    uint16_t h = 0;
    if (dtype != DType::kF32) std::memcpy(&h, raw + 2 * i, 2);
    switch (dtype) {
      case DType::kF32: std::memcpy(out + i, raw + 4 * i, 4); break;
      case DType::kBF16: out[i] = Bf16ToF32(h); break;
      default: out[i] = F16ToF32(h); break;
    }
  }
}

// Elements [first, first + n) of a tensor must be finite: a NaN or an infinity in the weights
// (a damaged download, a broken conversion) would make every logit that reads them NaN.
Status CheckFinite(const Reader& r, const TensorInfo& t, uint64_t first, const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      return DataLoss(r.Name() + ": tensor " + t.name + " holds " + (std::isnan(x[i]) ? "NaN" : "an infinity") +
                      " at element " + std::to_string(first + i) + " of " + std::to_string(t.NumElements()) +
                      "; the weights are corrupt, and export refuses them");
    }
  }
  return Status::Ok();
}

// Elements [first, first + n) of a stored float tensor, as float32, each checked finite.
Status ReadFloats(const Reader& r, const TensorInfo& t, uint64_t first, uint64_t n, std::vector<uint8_t>& raw,
                  float* out) {
  const size_t size = DTypeSize(t.dtype);
  raw.resize(n * size);
  G4_RETURN_IF_ERROR(r.Read(t.offset + first * size, n * size, raw.data()));
  r.Release(t.offset + first * size, n * size);
  DecodeFloats(t.dtype, raw.data(), n, out);
  return CheckFinite(r, t, first, out, n);
}

// One matrix quantized group by group as its values are written; the scales found on the way
// are kept for the scales tensor written right after.
class Quantizer {
 public:
  Quantizer(const Reader& r, const TensorInfo& t, DType type) : r_(r), t_(t), type_(type) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    groups_ = n / kQuantGroup;
  }
  Status FillValues(uint64_t offset, uint8_t* dst, size_t n) {
    const uint64_t gb = QuantValueBytes(type_, kQuantGroup);
    const uint64_t g0 = offset / gb, g1 = std::min(groups_, (offset + n + gb - 1) / gb);
    if (scales_.empty()) scales_.resize(groups_);
    std::vector<float> x((g1 - g0) * kQuantGroup);
    std::vector<uint8_t> raw;  // per chunk: a quantizer holds nothing between its writes but scales
    G4_RETURN_IF_ERROR(ReadFloats(r_, t_, g0 * kQuantGroup, x.size(), raw, x.data()));
    std::vector<uint8_t> q((g1 - g0) * gb);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < static_cast<int64_t>(g1 - g0); ++g) {
      const float* xg = x.data() + g * kQuantGroup;
      if (type_ == DType::kQ8) {
        QuantizeGroupQ8(xg, reinterpret_cast<int8_t*>(q.data() + g * gb), &scales_[g0 + g]);
      } else {
        QuantizeGroupQ4(xg, q.data() + g * gb, &scales_[g0 + g]);
      }
    }
    for (uint64_t g = g0; g < g1; ++g) {
      if ((scales_[g] & 0x7c00) == 0x7c00) {
        return InvalidArgument(r_.Name() + ": tensor " + t_.name + " has values near element " +
                               std::to_string(g * kQuantGroup) + " too large for a float16 scale (beyond " +
                               (type_ == DType::kQ8 ? "127" : "8") + " x 65504); export it as bf16");
      }
    }
    std::memcpy(dst, q.data() + (offset - g0 * gb), n);
    return Status::Ok();
  }
  Status FillScales(uint64_t offset, uint8_t* dst, size_t n) {
    if (scales_.size() != groups_) return Internal(t_.name + ": scales written before their values");
    std::memcpy(dst, reinterpret_cast<const uint8_t*>(scales_.data()) + offset, n);
    if (offset + n == groups_ * 2) std::vector<uint16_t>().swap(scales_);
    return Status::Ok();
  }

 private:
  const Reader& r_;
  TensorInfo t_;
  DType type_;
  uint64_t groups_ = 0;
  std::vector<uint16_t> scales_;
};

Status CopyFile(const std::string& from, const std::string& to) {
  G4_ASSIGN_OR_RETURN(std::string text, ReadTextFile(from, kMaxTokenizerBytes));
  return WriteTextFile(to, text);
}

// Writes the artifact of one checked model folder `src` (its checkpoint `ckpt`) into `out`.
Result<ExportedModel> ExportOne(const std::string& src, const Checkpoint& checkpoint, QuantScheme scheme,
                                const std::string& out, const std::atomic<bool>* cancel) {
  G4_ASSIGN_OR_RETURN(std::string config_text, ReadTextFile(JoinPath(src, "config.json"), kMaxConfigBytes));
  const Checkpoint* ckpt = &checkpoint;
  ExportedModel result;
  result.dir = out;
  std::vector<TensorToWrite> tensors;
  std::vector<std::unique_ptr<Quantizer>> quantizers;
  const DType qtype = scheme == QuantScheme::kQ8 ? DType::kQ8 : DType::kQ4;
  for (const auto& [name, ct] : ckpt->tensors()) {
    const TensorInfo& t = ct.info;
    const Reader& r = ckpt->file(ct.file);
    if (IsOtherTower(name)) {
      result.skipped++;
      continue;
    }
    if ((t.dtype == DType::kI8 || t.dtype == DType::kU8) && ckpt->Find(ScaleTensorName(name))) {
      return InvalidArgument(r.Name() + ": tensor " + name + " is already quantized; export from the original checkpoint");
    }
    const bool matrix = IsFloat(t.dtype) && t.shape.size() >= 2;
    if (matrix && scheme != QuantScheme::kBf16 && t.shape.back() % kQuantGroup == 0) {
      if (ckpt->Find(ScaleTensorName(name))) {
        return InvalidArgument(r.Name() + ": tensor " + ScaleTensorName(name) + " exists, so the scales of " + name +
                               " cannot take that name");
      }
      auto qz = std::make_unique<Quantizer>(r, t, qtype);
      Quantizer* raw = qz.get();
      quantizers.push_back(std::move(qz));
      std::vector<int64_t> values = t.shape, scales = t.shape;
      if (qtype == DType::kQ4) values.back() /= 2;
      scales.back() /= kQuantGroup;
      TensorToWrite v{name, qtype == DType::kQ8 ? DType::kI8 : DType::kU8, values, nullptr,
                      [raw](uint64_t o, uint8_t* d, size_t n) { return raw->FillValues(o, d, n); }};
      TensorToWrite s{ScaleTensorName(name), DType::kF16, scales, nullptr,
                      [raw](uint64_t o, uint8_t* d, size_t n) { return raw->FillScales(o, d, n); }};
      tensors.push_back(std::move(v));
      tensors.push_back(std::move(s));
      result.quantized++;
    } else if (matrix && scheme == QuantScheme::kBf16 && t.dtype != DType::kBF16) {
      TensorToWrite c{name, DType::kBF16, t.shape, nullptr,
                      [&r, t](uint64_t o, uint8_t* d, size_t n) -> Status {
                        std::vector<uint8_t> raw;
                        std::vector<float> x(n / 2);
                        G4_RETURN_IF_ERROR(ReadFloats(r, t, o / 2, n / 2, raw, x.data()));
                        for (size_t i = 0; i < n / 2; ++i) {
                          const uint16_t h = F32ToBf16(x[i]);
                          if ((h & 0x7f80) == 0x7f80) {
                            return InvalidArgument(r.Name() + ": tensor " + t.name + " element " +
                                                   std::to_string(o / 2 + i) + " is beyond bfloat16's range");
                          }
                          std::memcpy(d + 2 * i, &h, 2);
                        }
                        return Status::Ok();
                      }};
      tensors.push_back(std::move(c));
      result.quantized++;
    } else {
      TensorToWrite c{name, t.dtype, t.shape, nullptr, [&r, t](uint64_t o, uint8_t* d, size_t n) -> Status {
                        G4_RETURN_IF_ERROR(r.Read(t.offset + o, n, d));
                        r.Release(t.offset + o, n);
                        if (!IsFloat(t.dtype)) return Status::Ok();
                        const size_t size = DTypeSize(t.dtype);
                        std::vector<float> x(n / size);
                        DecodeFloats(t.dtype, d, x.size(), x.data());
                        return CheckFinite(r, t, o / size, x.data(), x.size());
                      }};
      tensors.push_back(std::move(c));
      if (matrix && scheme == QuantScheme::kBf16) {
        result.quantized++;
      } else {
        result.kept++;
      }
    }
  }
  nlohmann::json sources = nlohmann::json::object();
  std::vector<std::string> files = {JoinPath(src, "config.json")};
  for (size_t i = 0; i < ckpt->num_files(); ++i) files.push_back(ckpt->file(static_cast<int>(i)).Name());
  if (FileExists(JoinPath(src, "model.safetensors.index.json"))) files.push_back(JoinPath(src, "model.safetensors.index.json"));
  for (const std::string& f : files) {
    G4_ASSIGN_OR_RETURN(std::string digest, Sha256File(f, cancel));
    sources[fs::path(f).filename().string()] = digest;
  }
  std::map<std::string, std::string> metadata = {
      {"format", "pt"},
      {"gemma4.artifact_version", "1"},
      {"gemma4.quant", QuantSchemeName(scheme)},
      {"gemma4.quant_group_size", std::to_string(kQuantGroup)},
      {"gemma4.quant_layout",
       "NAME: I8 [..., n] (q8) or U8 [..., n/2] (q4: two values a byte, the even element in the low nibble, stored "
       "as q + 8); NAME_scale: F16 [..., n/32]; value = q * scale for each group of 32 along the last dimension"},
      {"gemma4.source_config", config_text},
      {"gemma4.source_sha256", sources.dump()},
  };
  // Every chunk written first asks whether the export was interrupted. A chunk's error names its
  // source; it is returned as it is, without the temporary file it was bound for.
  Status fill_error;
  for (TensorToWrite& t : tensors) {
    t.fill = [fill = std::move(t.fill), cancel, &fill_error](uint64_t o, uint8_t* d, size_t n) {
      fill_error = Cancelled(cancel) ? Interrupted() : fill(o, d, n);
      return fill_error;
    };
  }
  const std::string path = JoinPath(out, "model.safetensors");
  if (Status s = WriteSafetensors(path, tensors, metadata); !s.ok()) return fill_error.ok() ? s : fill_error;
  std::error_code ec;
  result.bytes = fs::file_size(path, ec);
  for (const char* name : kSideFiles) {
    if (FileExists(JoinPath(src, name))) G4_RETURN_IF_ERROR(CopyFile(JoinPath(src, name), JoinPath(out, name)));
  }
  return result;
}

}  // namespace

Result<QuantScheme> ParseQuantScheme(const std::string& s) {
  if (s == "bf16") return QuantScheme::kBf16;
  if (s == "q8") return QuantScheme::kQ8;
  if (s == "q4") return QuantScheme::kQ4;
  return InvalidArgument("--quant: '" + s + "' is not one of q8, q4, bf16");
}

const char* QuantSchemeName(QuantScheme s) {
  switch (s) {
    case QuantScheme::kBf16: return "bf16";
    case QuantScheme::kQ8: return "q8";
    case QuantScheme::kQ4: return "q4";
  }
  return "?";
}

Result<std::string> Sha256File(const std::string& path, const std::atomic<bool>* cancel) {
  G4_ASSIGN_OR_RETURN(std::unique_ptr<Reader> r, OpenFileReader(path));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return Internal("sha256: cannot start");
  std::vector<uint8_t> buf(8u << 20);
  for (uint64_t at = 0; at < r->Size();) {
    if (Cancelled(cancel)) return Interrupted();
    const uint64_t n = std::min<uint64_t>(buf.size(), r->Size() - at);
    G4_RETURN_IF_ERROR(r->Read(at, n, buf.data()));
    r->Release(at, n);
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
    at += n;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

Result<std::vector<ExportedModel>> ExportArtifacts(const std::string& model_dir, const std::string& assistant_dir,
                                                   QuantScheme scheme, const std::string& out_arg,
                                                   const std::atomic<bool>* cancel) {
  std::string out_dir = out_arg;
  while (out_dir.size() > 1 && out_dir.back() == '/') out_dir.pop_back();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out_dir, ec))) {
    return FailedPrecondition(out_dir + ": already exists; export writes a new folder");
  }
  // The sources checked as loading checks them, before anything is written: what export writes,
  // generate and the JavaScript API load.
  G4_ASSIGN_OR_RETURN(Model::Source target, Model::Check(model_dir));
  if (FileExists(JoinPath(model_dir, "tokenizer.json"))) {
    G4_RETURN_IF_ERROR(Tokenizer::Load(JoinPath(model_dir, "tokenizer.json")).status());
  }
  std::unique_ptr<Checkpoint> assistant_ckpt;
  if (!assistant_dir.empty()) {
    G4_ASSIGN_OR_RETURN(Assistant::Source as, Assistant::Check(assistant_dir, target.config));
    assistant_ckpt = std::move(as.ckpt);
  }

  // Everything is written into a folder of this process's own beside the destination, and
  // renamed into place at the end by a rename that never replaces: of two exports to one folder,
  // one wins and the other fails, and neither sees the other's files.
  const fs::path parent = fs::path(out_dir).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec) && !fs::create_directories(parent, ec)) {
    return NotFound(parent.string() + ": cannot create (" + ec.message() + ")");
  }
  std::string partial = out_dir + ".partial-" + std::to_string(getpid()) + "-XXXXXX";
  if (!mkdtemp(partial.data())) {
    return NotFound(partial + ": cannot create (" + std::strerror(errno) + ")");
  }
  // mkdtemp makes the folder private; the artifact gets the permissions of any new folder.
  const mode_t mask = umask(0);
  umask(mask);
  chmod(partial.c_str(), 0777 & ~mask);
  auto fail = [&](const Status& s) -> Status {
    fs::remove_all(partial, ec);
    return s;
  };
  std::vector<ExportedModel> done;
  auto exported = ExportOne(model_dir, *target.ckpt, scheme, partial, cancel);
  if (!exported.ok()) return fail(exported.status());
  done.push_back(std::move(exported).value());
  if (assistant_ckpt) {
    const std::string sub = JoinPath(partial, "assistant");
    if (!fs::create_directory(sub, ec)) return fail(NotFound(sub + ": cannot create (" + ec.message() + ")"));
    exported = ExportOne(assistant_dir, *assistant_ckpt, scheme, sub, cancel);
    if (!exported.ok()) return fail(exported.status());
    done.push_back(std::move(exported).value());
  }
  if (Cancelled(cancel)) return fail(Interrupted());
  if (renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, out_dir.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    // A file system without RENAME_NOREPLACE: rename() still refuses to replace a folder that
    // holds anything, such as another export.
    if (err == EINVAL || err == ENOSYS) err = std::rename(partial.c_str(), out_dir.c_str()) == 0 ? 0 : errno;
    if (err == EEXIST || err == ENOTEMPTY) {
      return fail(FailedPrecondition(out_dir + ": already exists (written while this export ran); nothing "
                                     "of this export was kept"));
    }
    if (err) return fail(DataLoss(out_dir + ": cannot move the export into place (" + std::strerror(err) + ")"));
  }
  done[0].dir = out_dir;
  if (done.size() > 1) done[1].dir = JoinPath(out_dir, "assistant");
  return done;
}

}  // namespace g4
