// The safetensors header parser: round trips, and every malformed header rejected with an error
// that names the file and the tensor.
#include <cstring>

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "tests/test_util.h"

namespace g4 {
namespace {

std::vector<uint8_t> Container(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

Result<SafetensorsHeader> Parse(const std::string& header, size_t data_bytes) {
  auto bytes = Container(header, data_bytes);
  auto reader = MakeMemoryReader(bytes, "x.safetensors");
  return ParseSafetensorsHeader(*reader);
}

void ExpectError(const std::string& header, size_t data_bytes, const std::string& needle) {
  auto r = Parse(header, data_bytes);
  ASSERT_FALSE(r.ok()) << header;
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("x.safetensors"), std::string::npos) << r.status().message();
}

TEST(Safetensors, ParsesTensorsAndMetadata) {
  auto r = Parse(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
                 R"("b":{"dtype":"F32","shape":[],"data_offsets":[12,16]}})",
                 16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metadata.at("format"), "pt");
  const TensorInfo& a = r->tensors.at("a");
  EXPECT_EQ(a.dtype, DType::kBF16);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.bytes, 12u);
  EXPECT_EQ(a.offset, r->data_offset);
  EXPECT_EQ(r->tensors.at("b").offset, r->data_offset + 12);
  EXPECT_EQ(r->tensors.at("b").NumElements(), 1);
}

TEST(Safetensors, RejectsMalformedHeaders) {
  ExpectError("not json", 0, "not a JSON object");
  ExpectError("[1,2]", 0, "not a JSON object");
  ExpectError(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4, "tensor t: missing dtype");
  ExpectError(R"({"t":{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}})", 4, "tensor t: unsupported dtype");
  ExpectError(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "tensor t: shape");
  ExpectError(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, "tensor t: shape");
  ExpectError(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, "tensor t: holds 4 bytes");
  ExpectError(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "tensor t: byte range");
  ExpectError(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4, "tensor t: byte range");
  ExpectError(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "tensor t: missing data_offsets");
  ExpectError(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", 4,
              "tensor t: shape too large");
  ExpectError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              8, "overlap");
  ExpectError(R"({"__metadata__":{"k":1}})", 0, "__metadata__");
}

// What the reference reader (the Rust safetensors crate) refuses, refused here too.
TEST(Safetensors, StrictAsTheReferenceReader) {
  const std::string t4 = R"({"dtype":"F32","shape":[1],"data_offsets":)";
  // A tensor named twice: a JSON parser keeps one entry and drops the other silently.
  ExpectError(R"({"a":)" + t4 + R"([0,4]},"a":)" + t4 + "[4,8]}}", 8, "tensor a is named twice");
  ExpectError(R"({"a":)" + t4 + R"([0,4]},"a":)" + t4 + "[0,4]}}", 4, "tensor a is named twice");
  ExpectError(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", 4,
              "tensor a: key 'dtype' appears twice");
  ExpectError(R"({"__metadata__":{"k":"1","k":"2"}})", 0, "__metadata__: key 'k' appears twice");
  // Bytes that belong to no tensor: before the first, between two, after the last.
  ExpectError(R"({"a":)" + t4 + "[4,8]}}", 8, "data bytes [0, 4) belong to no tensor (before tensor a)");
  ExpectError(R"({"a":)" + t4 + R"([0,4]},"b":)" + t4 + "[8,12]}}", 12,
              "data bytes [4, 8) belong to no tensor (before tensor b)");
  ExpectError(R"({"a":)" + t4 + "[0,4]}}", 12, "data bytes [4, 12) after the last tensor belong to no tensor");
  ExpectError("{}", 4, "data bytes [0, 4) after the last tensor");
  ExpectError(R"({"a":)" + t4 + R"([0,4]},"b":)" + t4 + "[0,4]}}", 4, "tensor b's bytes overlap tensor a's");
  // The header is a JSON object from its first byte.
  ExpectError(R"( {"a":)" + t4 + "[0,4]}}", 4, "not a JSON object");
  // Zero-size tensors and tensors listed out of order are fine where the ranges still tile.
  auto ok = Parse(R"({"b":)" + t4 + R"([4,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"a":)" + t4 + "[0,4]}}", 8);
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

TEST(Safetensors, RejectsLengthPastTheFile) {
  std::vector<uint8_t> bytes = Container("{}", 0);
  bytes[0] = 0xff;  // header length far beyond the file
  auto reader = MakeMemoryReader(bytes, "x.safetensors");
  auto r = ParseSafetensorsHeader(*reader);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds the file"), std::string::npos);
  auto tiny = MakeMemoryReader({1, 2, 3}, "x.safetensors");
  EXPECT_FALSE(ParseSafetensorsHeader(*tiny).ok());
}

TEST(Safetensors, WriteThenReadRoundTrips) {
  const std::string dir = test::MakeTempDir();
  const float a[3] = {1.5f, -2.0f, 3.25f};
  const uint16_t b[2] = {F32ToBf16(1.0f), F32ToBf16(-0.5f)};
  TensorToWrite filled{"c", DType::kF32, {5}, nullptr, [](uint64_t off, uint8_t* dst, size_t n) {
                         for (size_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(off + i);
                         return Status::Ok();
                       }};
  ASSERT_TRUE(WriteSafetensors(dir + "/t.safetensors",
                               {{"a", DType::kF32, {3}, a, {}}, {"b", DType::kBF16, {1, 2}, b, {}}, filled},
                               {{"format", "pt"}})
                  .ok());
  auto reader = OpenFileReader(dir + "/t.safetensors");
  ASSERT_TRUE(reader.ok());
  auto h = ParseSafetensorsHeader(**reader);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->data_offset % 8, 0u);
  float back[3];
  ASSERT_TRUE((*reader)->Read(h->tensors.at("a").offset, 12, back).ok());
  EXPECT_EQ(std::memcmp(back, a, 12), 0);
  uint8_t c[20];
  ASSERT_TRUE((*reader)->Read(h->tensors.at("c").offset, 20, c).ok());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c[i], i);
  EXPECT_FALSE((*reader)->Read((*reader)->Size() - 2, 4, c).ok());
}

TEST(DType, ConversionsRoundTrip) {
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f)), 1.0f);
  EXPECT_EQ(Bf16ToF32(F32ToBf16(-3.5f)), -3.5f);
  EXPECT_EQ(F32ToBf16(1.00390625f), F32ToBf16(1.0f));      // halfway rounds to even
  EXPECT_EQ(F16ToF32(F32ToF16(0.333251953125f)), 0.333251953125f);
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0x0001), 5.9604644775390625e-8f);     // smallest subnormal
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(1e6f), 0x7c00);
}

}  // namespace
}  // namespace g4
