#!/usr/bin/env bash
# `npm run gpu-runtime [-- DEST]`: the runtime folder a GPU host with no network and no Node.js needs
# beside the bundle (`npm run bundle`). Build it on a connected x86-64 Debian machine; copy DEST and
# bundle/ to the host; there `source DEST/setup.sh && node bundle/xtts.cjs …`.
#
#   DEST/node.xz       this machine's Node.js binary, stripped and xz-compressed
#   DEST/debs/gpu/     the Vulkan loader and the GL vendor-neutral dispatch libraries that the NVIDIA
#                      Vulkan driver loads (Dawn, the webgpu backend, reaches the GPU through them)
#   DEST/debs/espeak/  espeak-ng, its data and every library it links to but the C/C++ runtime
#                      (text.tokenizer: phonemes, and bench/intelligibility's speech); espeak-ng's
#                      audio output pulls in PulseAudio and ALSA, which GPU servers seldom have
#   DEST/setup.sh      `source` it on the host: unpacks all of it into DEST (nothing outside DEST is
#                      written), puts node and an espeak-ng wrapper (which alone sees the espeak
#                      libraries) on PATH, sets LD_LIBRARY_PATH, XTTS_NODE and, when it finds the
#                      NVIDIA Vulkan driver's manifest, VK_DRIVER_FILES
set -euo pipefail
dest=${1:-.gpu-runtime}
gpu_packages=(libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2)
[[ $(uname -m) == x86_64 ]] || { echo "gpu-runtime: this machine is $(uname -m); GPU hosts are x86_64: build the folder on an x86_64 machine" >&2; exit 2; }
command -v apt-get >/dev/null || { echo "gpu-runtime: needs apt-get (a Debian machine) to download the Vulkan loader and espeak-ng" >&2; exit 2; }
mkdir -p "$dest/debs/gpu" "$dest/debs/espeak"
apt-cache show espeak-ng >/dev/null 2>&1 || apt-get update -qq
# espeak-ng and what it needs, recursively, but the C and C++ runtimes and the packaging tools every host has.
mapfile -t espeak_packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances --no-pre-depends espeak-ng |
  grep -v '^ ' | grep -v '^<' | grep -vxE 'libc6|libgcc-s1|libstdc\+\+6|gcc-12-base|debconf|dpkg|perl-base|init-system-helpers|adduser|passwd|base-files' | sort -u)

download() { # folder packages...
  local dir=$1
  shift
  local missing=() p
  for p in "$@"; do compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p"); done
  ((${#missing[@]} == 0)) || (cd "$dir" && apt-get download "${missing[@]}")
}
download "$dest/debs/gpu" "${gpu_packages[@]}"
download "$dest/debs/espeak" "${espeak_packages[@]}"

node_bin=$(command -v node)
if [[ ! -f $dest/node.xz || $node_bin -nt $dest/node.xz ]]; then
  tmp=$(mktemp)
  cp "$node_bin" "$tmp" && { strip "$tmp" 2>/dev/null || true; }
  xz -T0 -6 -c "$tmp" >"$dest/node.xz.part" && mv "$dest/node.xz.part" "$dest/node.xz"
  rm -f "$tmp"
fi

cat >"$dest/setup.sh" <<'SETUP'
# xtts GPU-host runtime: `source` this file (bash). Unpacks Node.js and the packages beside it once.
_xtts_rt=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -x $_xtts_rt/bin/node ]]; then
  mkdir -p "$_xtts_rt/bin" && xz -dc "$_xtts_rt/node.xz" >"$_xtts_rt/bin/node.part" && chmod +x "$_xtts_rt/bin/node.part" && mv "$_xtts_rt/bin/node.part" "$_xtts_rt/bin/node"
fi
for _part in gpu espeak; do
  if [[ ! -f $_xtts_rt/$_part/.unpacked ]]; then
    mkdir -p "$_xtts_rt/$_part" && for _deb in "$_xtts_rt/debs/$_part"/*.deb; do dpkg-deb -x "$_deb" "$_xtts_rt/$_part"; done && touch "$_xtts_rt/$_part/.unpacked"
  fi
done
# espeak-ng from the runtime folder with its own libraries and data; no other program sees them.
printf '%s\n' '#!/bin/sh' 'e=$(cd "$(dirname "$0")/../espeak" && pwd)' 'lib=$e/usr/lib/x86_64-linux-gnu' \
  'LD_LIBRARY_PATH=$lib:$e/lib/x86_64-linux-gnu:$lib/pulseaudio${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ESPEAK_DATA_PATH=$lib exec "$e/usr/bin/espeak-ng" "$@"' >"$_xtts_rt/bin/espeak-ng"
chmod +x "$_xtts_rt/bin/espeak-ng"
export XTTS_NODE=$_xtts_rt/bin/node
export PATH=$_xtts_rt/bin:$PATH
export LD_LIBRARY_PATH=$_xtts_rt/gpu/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for _icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
  if [[ -f $_icd ]]; then export VK_DRIVER_FILES=$_icd; break; fi
done
echo "xtts runtime: node $("$XTTS_NODE" --version); $(espeak-ng --version 2>&1 | head -n 1 | cut -c1-60); Vulkan driver manifest: ${VK_DRIVER_FILES:-none found}"
unset _xtts_rt _part _icd _deb
SETUP
echo "gpu-runtime: $dest ($(du -sh "$dest" | cut -f1)); on the GPU host: source $dest/setup.sh && node bundle/xtts.cjs diagnose-gpu-utilization"
