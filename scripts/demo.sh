#!/usr/bin/env bash
# Sets up Scout (scripts/setup.sh) and runs `scout demo` on the built-in scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/scout demo "$@"
