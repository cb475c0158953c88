#!/usr/bin/env bash
# Puts a CPU Vulkan driver (Mesa 25 lavapipe from bookworm-backports, which Dawn accepts) and the
# Vulkan loader into .lavapipe/ without touching the system's apt sources, and writes
# .lavapipe/env.sh, which points Vulkan at it: `source .lavapipe/env.sh` before running WebGPU
# code in Node on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$PWD/.lavapipe
lib=$dest/root/usr/lib/x86_64-linux-gnu
if [ ! -f "$lib/libvulkan_lvp.so" ]; then
  work=$(mktemp -d)
  mkdir -p "$work/parts" "$work/lists/partial" "$work/cache" "$dest/debs"
  cat > "$work/parts/backports.sources" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  o="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/parts -o Dir::State::Lists=$work/lists -o Dir::Cache=$work/cache -o APT::Sandbox::User=root"
  apt-get $o update -qq
  (cd "$dest/debs" && apt-get $o download -qq mesa-vulkan-drivers/bookworm-backports libdrm2/bookworm-backports \
    libdrm-amdgpu1/bookworm-backports libvulkan1)
  rm -rf "$dest/root"
  for f in "$dest"/debs/*.deb; do dpkg -x "$f" "$dest/root"; done
  rm -rf "$work"
  echo "lavapipe ready in $dest"
fi
printf '{"file_format_version": "1.0.0", "ICD": {"api_version": "1.3.0", "library_path": "%s/libvulkan_lvp.so"}}\n' "$lib" > "$dest/lvp_icd.json"
cat > "$dest/env.sh" <<ENV
export VK_ICD_FILENAMES=$dest/lvp_icd.json
export VK_DRIVER_FILES=$dest/lvp_icd.json
export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
# Compiled shaders are kept on disk, in .lavapipe/, so that each new process (every CLI run of
# the tests) does not compile every kernel again. Mesa keys each
# entry by the shader and the driver's build; its database locks its files, so processes side by
# side may share it.
unset MESA_SHADER_CACHE_DISABLE
export MESA_SHADER_CACHE_DIR=$dest/shader-cache
export MESA_SHADER_CACHE_MAX_SIZE=512M
# 128-bit vectors (4 lanes, and subgroups of 4) instead of the CPU's widest: LLVM compiles each
# kernel in about half the time, and the tests' small dispatches run as fast.
export LP_NATIVE_VECTOR_WIDTH=128
ENV
