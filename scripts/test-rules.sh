#!/usr/bin/env bash
# Alert rules: `promtool check rules`, the promtool unit tests, then an end-to-end scrape of the
# real sidecar (`node dist/cli.js demo`) by a real Prometheus (scripts/prometheus-e2e.ts).
# Needs Debian's `prometheus` package (promtool and prometheus on PATH).
# Extra arguments go to the e2e script, e.g. `-- node other-target.js` to scrape something else.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in promtool prometheus; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "test-rules: '$tool' not found; install Debian's prometheus package (apt-get install prometheus)" >&2
    exit 1
  fi
done

promtool check rules deploy/prometheus/alerts.yaml
promtool test rules deploy/prometheus/alerts.test.yaml

# The default e2e target is the built CLI, so build it first.
if [ "$#" -eq 0 ]; then npm run build --silent; fi
node --import tsx scripts/prometheus-e2e.ts "$@"
