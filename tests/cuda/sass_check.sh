#!/bin/sh
# tests/cuda/sass_check.sh NVCC SOURCE_DIR -- the tensor-core kernels' sm_90 machine code, read
# without a GPU. Compiles tests/cuda/sass_kernels.cu with `nvcc -arch=sm_90 -cubin -Xptxas -v`,
# disassembles it with cuobjdump -sass, and checks per kernel:
#   versions 6 (mma) and 7 (pipelined): HMMA (mma.sync) and LDSM (ldmatrix) are there, and in 7
#   LDGSTS (cp.async); no LDL or STL (local memory: spilled registers or a stack array); and the
#   registers and static shared memory ptxas reports let an sm_90 SM hold at least the blocks the
#   kernel's shape was built for (its __launch_bounds__ minimum, below).
# Version 5 (wmma) at d_head 64: HMMA, no LDL or STL, 4 blocks of 4 warps (25%, what docs/06
# says of it); at d_head 128 (2 warps, O and Q in 128 registers) it is listed, not checked. Exit
# 77 (skipped) without nvcc or cuobjdump: ${HEADWISE_CUDA_HOME:-/usr/local/cuda}/bin (as gpu-check), then
# scripts/fetch-cuda-binutils's cache, then PATH.
#
# Blocks built for, per kernel (the `blocks` of kernels/flash_tiles.hpp's shapes; version 7's
# shape is the FlashTilesE<n>E in its name, n its place in the enum):
#   version 5 at d_head 64, version 6, and 7 in w4_r16_k32 and at d_head 128: 16 warps, 25%
#   (128 registers a thread);
#   7 in w4_r16_k64: 3 blocks of 4 warps, 18.75% (168 registers);
#   7 in w8_r16_k32: 2 blocks of 8 warps, 25% (128 registers);
#   7 in w4_r32_k32, w4_r32_k32_s3 and w4_r32_k64 (the default): 2 blocks of 4 warps, 12.5% (255).
# Why not >= 25% for all: version 7's default, w4_r32_k64, is FlashAttention-2's shape -- 32 query
# rows a warp (S and O (32, 64) in registers, 64 each) trade occupancy for half the ldmatrix reads
# per mma and half the barriers per key, and 243 registers a thread fit 8 warps an SM. On the
# H200 it beat the 25% shapes (docs/data/gpu-h200-2026-11-26-tiles.csv). What must still hold is
# that it gets those 8 warps: a register or shared-memory creep past its budget (ptxas spilling,
# or 1 block) fails here.
#
# Occupancy on sm_90, from the hardware's limits per SM: 65536 registers, allocated per warp in
# units of 256 (a warp of R registers per thread takes ceil(32 R / 256) * 256); 228 KiB of shared
# memory, of which each block also reserves 1 KiB; 64 warps; 32 blocks. Blocks per SM is the
# smallest of the four limits; occupancy = blocks x warps per block / 64.
set -u
nvcc=$1
src=$2
[ -x "$nvcc" ] || { echo "skipped: no nvcc at $nvcc"; exit 77; }
cuobjdump=""
for dir in "${HEADWISE_CUDA_HOME:-/usr/local/cuda}/bin" "${XDG_CACHE_HOME:-$HOME/.cache}/headwise/cuda-binutils"; do
    [ -x "$dir/cuobjdump" ] && { cuobjdump=$dir/cuobjdump; break; }
done
[ -n "$cuobjdump" ] || cuobjdump=$(command -v cuobjdump || true)
if [ -z "$cuobjdump" ]; then
    echo "skipped: no cuobjdump (scripts/fetch-cuda-binutils fetches NVIDIA's, 13.2.51, pinned by sha256)"
    exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$nvcc" -std=c++17 -I "$src/src" -arch=sm_90 -cubin -Xptxas -v -o "$work/k.cubin" \
    "$src/tests/cuda/sass_kernels.cu" >"$work/ptxas.txt" 2>&1; then
    cat "$work/ptxas.txt"
    echo "FAILED: nvcc could not compile tests/cuda/sass_kernels.cu for sm_90"
    exit 1
fi
"$cuobjdump" -sass "$work/k.cubin" >"$work/sass.txt" || { echo "FAILED: $cuobjdump could not read the cubin"; exit 1; }

# One line per kernel: name regs smem, from ptxas; then opcode counts from the SASS.
awk '/Compiling entry function/ { f = $0; sub(/.*function .?_ZN8headwise7kernels[0-9]+/, "", f); sub(/EEvPKT0.*/, "", f) }
     /Used [0-9]+ registers/ { r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r)
                               s = 0; if ($0 ~ /bytes smem/) { s = $0; sub(/ bytes smem.*/, "", s); sub(/.*, /, "", s) }
                               print f, r, s }' "$work/ptxas.txt" >"$work/resources.txt"
awk '/Function :/ { f = $3; sub(/^_ZN8headwise7kernels[0-9]+/, "", f); sub(/EEvPKT0.*/, "", f) }
     { n = split($0, w, /[^A-Z0-9_.]+/); for (i = 1; i <= n; ++i) { op = w[i]; sub(/\..*/, "", op)
           if (op == "HMMA" || op == "LDSM" || op == "LDGSTS" || op == "LDL" || op == "STL") c[f " " op]++ } }
     END { for (k in c) print k, c[k] }' "$work/sass.txt" >"$work/opcodes.txt"

status=0
printf '%-66s %5s %7s %7s %5s %5s %5s %5s %6s\n' kernel regs smem_B blocks occ built HMMA LDSM LDGSTS
while read -r kernel regs smem; do
    count() { awk -v k="$kernel" -v op="$1" '$1 == k && $2 == op { n = $3 } END { print n + 0 }' "$work/opcodes.txt"; }
    hmma=$(count HMMA); ldsm=$(count LDSM); ldgsts=$(count LDGSTS); local_ops=$(($(count LDL) + $(count STL)))
    # warps per block, and the blocks per SM the kernel was built for (0: listed, not checked)
    case $kernel in
        attention_tensor_coreILi128*) warps=2 built=0 ;;
        attention_tensor_core* | attention_mma*) warps=4 built=4 ;;
        attention_pipelinedILi128*FlashTilesE5E*) warps=8 built=2 ;;
        attention_pipelinedILi128*) warps=4 built=4 ;;
        attention_pipelined*FlashTilesE0E*) warps=4 built=4 ;;
        attention_pipelined*FlashTilesE1E*) warps=4 built=3 ;;
        attention_pipelined*FlashTilesE[234]E*) warps=4 built=2 ;;
        attention_pipelined*FlashTilesE5E*) warps=8 built=2 ;;
        *) warps=4 built=-1 ;;
    esac
    per_warp=$(( (regs * 32 + 255) / 256 * 256 ))
    by_regs=$(( 65536 / per_warp / warps ))
    by_smem=$(( 233472 / (smem + 1024) ))
    by_warps=$(( 64 / warps ))
    blocks=$by_regs
    for b in $by_smem $by_warps 32; do [ "$b" -lt "$blocks" ] && blocks=$b; done
    occupancy=$(awk -v b="$blocks" -v w="$warps" 'BEGIN { printf "%.2f", 100 * b * w / 64 }')
    printf '%-66s %5s %7s %7s %4s%% %5s %5s %5s %6s\n' "$kernel" "$regs" "$smem" "$blocks" "$occupancy" "$built" \
        "$hmma" "$ldsm" "$ldgsts"
    [ "$built" -eq 0 ] && continue  # version 5 at d_head 128: for comparison
    fail() { echo "FAILED: $kernel: $1"; status=1; }
    [ "$built" -gt 0 ] || { fail "no shape this check knows (add its warps and blocks to sass_check.sh)"; continue; }
    [ "$hmma" -gt 0 ] || fail "no HMMA (mma.sync) in its machine code"
    case $kernel in attention_tensor_core*) ;; *) [ "$ldsm" -gt 0 ] || fail "no LDSM (ldmatrix) in its machine code" ;; esac
    case $kernel in attention_pipelined*) [ "$ldgsts" -gt 0 ] || fail "no LDGSTS (cp.async) in its machine code" ;; esac
    [ "$local_ops" -eq 0 ] || fail "$local_ops local-memory loads/stores (LDL/STL): spilled registers"
    [ "$blocks" -ge "$built" ] ||
        fail "$blocks block(s) of $warps warps an SM ($occupancy%), not the $built it was built for ($regs registers, $smem bytes of shared memory)"
done <"$work/resources.txt"
[ -s "$work/resources.txt" ] || { echo "FAILED: no kernel found in ptxas's report"; status=1; }
exit $status
