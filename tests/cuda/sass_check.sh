#!/bin/sh
# tests/cuda/sass_check.sh NVCC SOURCE_DIR -- the tensor-core kernels' sm_90 machine code, read
# without a GPU. Compiles tests/cuda/sass_kernels.cu with `nvcc -arch=sm_90 -cubin -Xptxas -v`,
# disassembles it with cuobjdump -sass, and checks per kernel:
#   versions 6 (mma) and 7 (pipelined): HMMA (mma.sync) and LDSM (ldmatrix) are there, and in 7
#   LDGSTS (cp.async); no LDL or STL (local memory: spilled registers or a stack array); and the
#   registers and static shared memory ptxas reports give >= 25% theoretical occupancy on sm_90.
# Version 5 (wmma) at d_head 64: HMMA, no LDL or STL, >= 25% occupancy (what docs/06 says of
# it); at d_head 128 (2 warps, O and Q in 128 registers) it is listed, not checked. Exit 77
# (skipped) without nvcc or
# cuobjdump: /usr/local/cuda/bin, then scripts/fetch-cuda-binutils's cache, then PATH.
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
for dir in /usr/local/cuda/bin "${XDG_CACHE_HOME:-$HOME/.cache}/headwise/cuda-binutils"; do
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
printf '%-44s %5s %7s %7s %5s %5s %6s %7s\n' kernel regs smem_B blocks occ HMMA LDSM LDGSTS
while read -r kernel regs smem; do
    count() { awk -v k="$kernel" -v op="$1" '$1 == k && $2 == op { n = $3 } END { print n + 0 }' "$work/opcodes.txt"; }
    hmma=$(count HMMA); ldsm=$(count LDSM); ldgsts=$(count LDGSTS); local_ops=$(($(count LDL) + $(count STL)))
    warps=4  # every tensor-core kernel here runs 128 threads... except version 5 at d_head 128 (2 warps)
    case $kernel in attention_tensor_coreILi128*) warps=2 ;; esac
    per_warp=$(( (regs * 32 + 255) / 256 * 256 ))
    by_regs=$(( 65536 / per_warp / warps ))
    by_smem=$(( 233472 / (smem + 1024) ))
    by_warps=$(( 64 / warps ))
    blocks=$by_regs
    for b in $by_smem $by_warps 32; do [ "$b" -lt "$blocks" ] && blocks=$b; done
    occupancy=$(( 100 * blocks * warps / 64 ))
    printf '%-44s %5s %7s %7s %4s%% %5s %5s %6s\n' "$kernel" "$regs" "$smem" "$blocks" "$occupancy" "$hmma" "$ldsm" "$ldgsts"
    case $kernel in
        attention_tensor_coreILi128*) continue ;;  # version 5 at d_head 128: for comparison
    esac
    fail() { echo "FAILED: $kernel: $1"; status=1; }
    [ "$hmma" -gt 0 ] || fail "no HMMA (mma.sync) in its machine code"
    case $kernel in attention_tensor_core*) ;; *) [ "$ldsm" -gt 0 ] || fail "no LDSM (ldmatrix) in its machine code" ;; esac
    case $kernel in attention_pipelined*) [ "$ldgsts" -gt 0 ] || fail "no LDGSTS (cp.async) in its machine code" ;; esac
    [ "$local_ops" -eq 0 ] || fail "$local_ops local-memory loads/stores (LDL/STL): spilled registers"
    [ "$occupancy" -ge 25 ] || fail "theoretical occupancy $occupancy% < 25% ($regs registers, $smem bytes of shared memory)"
done <"$work/resources.txt"
[ -s "$work/resources.txt" ] || { echo "FAILED: no kernel found in ptxas's report"; status=1; }
exit $status
