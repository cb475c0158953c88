// One runtime build's variant, from its compile definitions (CMakeLists.txt: g4_runtime):
// G4_MTP=0 leaves the assistant out, G4_PROFILE=1 times every kernel (runtime_api.cc).
extern const bool g4_build_mtp = G4_MTP != 0;
extern const bool g4_build_profile = G4_PROFILE != 0;
