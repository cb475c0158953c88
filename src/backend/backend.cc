#include "backend/backend.h"

#include "base/quant.h"

namespace g4 {

Status CheckQuantizedSource(DType type, uint64_t elements, const Reader& values, uint64_t values_offset,
                            const Reader& scales, uint64_t scales_offset) {
  if (!IsQuantized(type)) return InvalidArgument(std::string("quantized weights of type ") + DTypeName(type));
  if (elements % kQuantGroup) {
    return InvalidArgument(values.Name() + ": " + std::to_string(elements) + " quantized values are not whole groups of " +
                           std::to_string(kQuantGroup));
  }
  const uint64_t vb = QuantValueBytes(type, elements), sb = QuantScaleBytes(elements);
  if (values_offset > values.Size() || vb > values.Size() - values_offset) {
    return OutOfRange(values.Name() + ": quantized values outside the file");
  }
  if (scales_offset > scales.Size() || sb > scales.Size() - scales_offset) {
    return OutOfRange(scales.Name() + ": quantization scales outside the file");
  }
  return Status::Ok();
}

}  // namespace g4
