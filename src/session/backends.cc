#include "session/backends.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "backend/backend.h"

namespace g4 {

BackendFactory CpuBackends(int threads) {
  return [threads](const BackendNeeds&) -> Result<std::unique_ptr<Backend>> { return MakeCpuBackend(threads); };
}

Result<BackendFactory> WebGpuBackends(uint64_t fill, std::string remedy) {
#ifdef __wasi__
  return BackendFactory([fill, remedy = std::move(remedy)](const BackendNeeds& needs)
                            -> Result<std::unique_ptr<Backend>> {
    const double binding = WebGpuMaxBindingBytes();
    if (static_cast<double>(needs.least_bytes) > binding) {
      return ResourceExhausted("a context of " + std::to_string(needs.context) + " tokens needs " +
                               std::to_string(needs.least_bytes >> 20) +
                               " MiB of K/V cache and activations in one buffer, but this adapter binds at most " +
                               std::to_string(static_cast<uint64_t>(binding) >> 20) +
                               " MiB (maxStorageBufferBindingSize); " + remedy);
    }
    return MakeWebGpuBackend(std::min<uint64_t>(needs.arena_bytes, static_cast<uint64_t>(binding)), 0, fill);
  });
#else
  (void)fill;
  (void)remedy;
  return InvalidArgument("this build has no WebGPU backend");
#endif
}

}  // namespace g4
