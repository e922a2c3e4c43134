"""The rendered Helm chart run with podman: translation (pods), execution (runner), the smoke (smoke)."""
