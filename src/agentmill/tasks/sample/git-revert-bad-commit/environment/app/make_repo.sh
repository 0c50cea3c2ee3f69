#!/bin/sh
# Builds the starting repository /app/repo (run once at image build time).
set -e
export GIT_AUTHOR_NAME="Dana Ruiz" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Ruiz" GIT_COMMITTER_EMAIL="dana@example.com"
commit() { # commit DATE MESSAGE
  GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1" git commit -q -m "$2"
}
git init -q -b main /app/repo
cd /app/repo

cat > README.md <<'TXT'
# skyline

A tiny command line client for the Skyline weather API.
TXT
cat > config.py <<'TXT'
"""Runtime defaults for the skyline client."""

API_URL = "https://api.skyline.example/v2"
TIMEOUT_SECONDS = 30
UNITS = "metric"
RETRIES = 3
TXT
git add README.md config.py
commit "2024-02-01T09:00:00+01:00" "Initial commit"

cat > forecast.py <<'TXT'
import config


def forecast_url(city):
    return f"{config.API_URL}/forecast?city={city}&units={config.UNITS}"
TXT
git add forecast.py
commit "2024-02-02T10:15:00+01:00" "Add forecast command"

cat > config.py <<'TXT'
"""Runtime defaults for the skyline client."""

API_URL = "https://staging.skyline.example/v2"
TIMEOUT_SECONDS = 2
UNITS = "imperial"
RETRIES = 0
TXT
git add config.py
commit "2024-02-03T16:40:00+01:00" "Tweak defaults for staging"

cat >> README.md <<'TXT'

## Usage

    python3 -m skyline forecast Berlin
TXT
git add README.md
commit "2024-02-05T11:05:00+01:00" "Document forecast command"

cat > forecast.py <<'TXT'
import config


def forecast_url(city, days=3):
    return f"{config.API_URL}/forecast?city={city}&days={days}&units={config.UNITS}"
TXT
git add forecast.py
commit "2024-02-06T14:30:00+01:00" "Add --days option to forecast"
