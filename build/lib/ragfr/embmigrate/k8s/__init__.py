"""Kubernetes side of an embedding migration: `openwebui` repoints Open WebUI at the switch, `manifests`
builds the Job that runs the migration in the cluster, `orchestrate` submits and follows it."""
