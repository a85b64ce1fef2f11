#!/usr/bin/env bash
# Alert rules: `promtool check rules`, the promtool unit tests, then the end-to-end check with the
# built CLI and a real Prometheus (scripts/prometheus-e2e.ts): `promtool check metrics` on a real
# /metrics scrape, the rules under two scrape job names, B2BSidecarLocalErrors firing when the
# sidecar itself answers 502, B2BSidecarDown when it stops.
# Needs Debian's `prometheus` package (promtool and prometheus on PATH). Takes about 2 minutes.
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

npm run build --silent
node --import tsx scripts/prometheus-e2e.ts
