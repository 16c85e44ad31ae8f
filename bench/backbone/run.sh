#!/usr/bin/env bash
# The EfficientNet backbone through OpenCV DNN, as the node loads it (the
# project's graph rewrites and layers), against ONNX Runtime 1.30's CPU
# provider (ort.mjs), on the same ONNX files with the same thread count:
# seeded B0 at 224 (TF SAME padding) and B3 at 300 (Keras padding).
# bench/backbone/pair runs the two frame by frame in turn, FRAMES pairs:
# each turn starts after 100 ms idle, runs one untimed frame and times
# the next (warm), or with WARM=0 times the first (cold: what a 10 Hz
# node's frame finds, the other side's frame between). It runs ROUNDS
# times, each a fresh pair of processes: a VM's speed also differs from
# process to process by more than a round's interval says. The table
# gives each side's median over all rounds' frames and the median of the
# rounds' median ratios, then each round's ratio. Then ours' mean frame
# by layer type and by block (ttm backbone --check --profile, a run of
# its own).
#
#   bench/backbone/run.sh              or: make bench-backbone
#   THREADS=1 ROUNDS=5 WARM=0 bench/backbone/run.sh
#
# Needs Go and OpenCV to build bin/ttm (make setup), Node.js and npm.
# Files go to bin/bench/backbone. About two minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
FRAMES=${FRAMES:-30}
WARM=${WARM:-1}
OUT=bin/bench/backbone
mkdir -p "$OUT"
LOG=$OUT/ttm.log
: >"$LOG"
load=$(cut -d' ' -f1 /proc/loadavg) # before we add ours: other work on the machine skews both sides

command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
export GONOSUMDB=github.com/bluenviron
go build -o bin/ttm ./cmd/ttm # a no-op when bin/ttm is up to date
go build -o "$OUT/pair" ./bench/backbone/pair
if [ ! -d bench/backbone/node_modules ]; then
	# The CPU provider ships in the package; skip its postinstall's CUDA download.
	(cd bench/backbone && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
fi

# bench ID LABEL SIZE GENERATE-FLAGS...: one table row; ours' profile goes to $OUT/ID.profile.
bench() {
	local id=$1 label=$2 size=$3 file=$OUT/$1.onnx out
	shift 3
	bin/ttm backbone "$@" --seed 1 --out "$file" >/dev/null 2>>"$LOG"
	for ((i = 0; i < ROUNDS; i++)); do
		"$OUT/pair" -onnx "$file" -size "$size" -threads "$THREADS" -frames "$FRAMES" -warm "$WARM" -times 2>>"$LOG"
	done | awk -v label="$label" -v rounds="$ROUNDS" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		$1 == "pair" { ours[++n] = $2; ort[n] = $3 }
		$1 == "ratio_median" { r[++k] = $2; each = each (k > 1 ? ", " : "") $2 }
		END {
			if (n == 0 || k != rounds) { print "bench/backbone/pair printed no timing" > "/dev/stderr"; exit 1 }
			printf "| %s | %.2f ms | %.2f ms | %.2f (rounds: %s) |\n", label, median(ours, n), median(ort, n), median(r, k), each
		}'
	out=$(bin/ttm backbone --check "$file" --size "$size" --threads "$THREADS" --profile --frames "$FRAMES" 2>>"$LOG")
	if ! grep -q "ms per frame (median of $FRAMES frames, $THREADS OpenCV threads)" <<<"$out"; then
		echo "ours did not run on $THREADS threads:" >&2; echo "$out" >&2; exit 1
	fi
	sed -n '/^mean frame by layer type/,$p' <<<"$out" >"$OUT/$id.profile"
}

echo "| backbone | ours (OpenCV DNN + project layers) | ONNX Runtime 1.30 CPU | ours / ORT |"
echo "|---|---|---|---|"
bench b0-224 "EfficientNet-B0, 224, SAME padding" 224 --variant b0 --padding same
bench b3-300 "EfficientNet-B3, 300, Keras padding" 300 --variant b3
echo
cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
timed=$([ "$WARM" = 0 ] && echo "the first frame of each turn (cold)" || echo "the frame after $WARM untimed in each turn (warm)")
echo "CPU: $cpu, $cores cores; $THREADS threads per side; $ROUNDS rounds of $FRAMES pairs of frames, in turn, $timed; load average $load at the start."
for id in b0-224 b3-300; do
	echo
	echo "ours, $id: $(cat "$OUT/$id.profile")"
done
