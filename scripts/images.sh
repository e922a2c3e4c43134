#!/usr/bin/env bash
# Every image the chart names, built, saved or pushed under the references the chart renders.
#   scripts/images.sh build          build ragfr/ragdb, ragfr/ragfr, ragfr/owui-init, run each image's smoke test,
#                                    tag them <name>:<appVersion of charts/ragfr/Chart.yaml>, print reference + ID;
#                                    also ragfr/reranker (the French cross-encoder, openwebui.reranker.source=image)
#                                    when `make reranker` has trained it here, else says it is skipped
#   scripts/images.sh build-ragdb-ragfr, then build-owui-init
#                                    `build` in two halves: the first needs no .venv-owui (make test runs it while
#                                    that venv installs), the second smoke-tests owui-init with it and ends as
#                                    `build` does (reranker, .build/images.built)
#   scripts/images.sh save DIR [VALUES.yaml ...]
#                                    one OCI archive per image in DIR + DIR/SHA256SUMS (air-gapped sites,
#                                    `k3s ctr images import`), named localhost/ragfr/<name>:<appVersion> as the chart
#                                    renders them with global.imageSource=imported; then every upstream image the
#                                    chart renders with those values (Open WebUI, Ollama, ...), pulled here into a
#                                    scratch store, so the site has every image the release names (one pinned by
#                                    digest is copied with skopeo, digest kept). A pull that fails
#                                    stops the save with one line; IMAGES_UPSTREAM=0 saves the ragfr images only
#   scripts/images.sh current        exit 0 when the images .build/images.built lists exist and were built from
#                                    this checkout's inputs (`make run` then skips the rebuild)
#   scripts/images.sh push REGISTRY  push to REGISTRY/<name>:<appVersion>, the references the chart renders with
#                                    global.imageRegistry=REGISTRY; prints each manifest digest, and on stderr
#                                    the chart value pinning each image by it (<key>=<appVersion>@sha256:...)
#   scripts/images.sh list           the local references, one a line (the three, then ragfr/reranker if built)
#   scripts/images.sh ids            the same with their image IDs (as `build` ends)
#   scripts/images.sh inputs         a hash of every file the images are built from (.build/images.built records
#                                    it, so the cluster smoke can tell images older than the checkout)
#   scripts/images.sh pin NAME DIGEST  the chart value that pins image NAME by DIGEST (what push and save print)
# Digests to pin are the registry's (push) or the archive's (save): podman compresses the layers when it pushes
# or saves, so a local image's own digest is not the one the nodes will see.
# Env: IMAGES_BASE (default: the project's debootstrap Debian 12 minbase, no registry needed; set it to
# "official" to build on the Containerfiles' public bases), IMAGES_TLS_VERIFY (push; default true),
# IMAGES_SKIP_SMOKE=1 (build without the smoke tests; never in CI), IMAGES_UPSTREAM (save; default 1),
# PY (python with ragfr_tools and helm-python-sdk, for save's upstream list; default .venv/bin/python).
set -euo pipefail
ROOT="${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
MINBASE="localhost/ragfr-bookworm-minbase:1"
NAMES=(ragdb ragfr owui-init)
# Built only from a model trained on this machine (`make reranker`); the chart runs no cross-encoder by
# default, so the release needs it only with openwebui.reranker.source=image. save, push, list and ids
# include it when it is built.
OPTIONAL=(reranker)

app_version() {
  sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$ROOT/charts/ragfr/Chart.yaml"
}
VERSION="$(app_version)"
[[ -n "$VERSION" ]] || { echo "images: no appVersion in charts/ragfr/Chart.yaml" >&2; exit 2; }
# podman stores an unqualified name under localhost/; the chart's default references are ragfr/<name>.
ref() { echo "localhost/ragfr/$1:$VERSION"; }

# The chart value pinning image NAME by DIGEST, as `helm --set` takes it: <values key>=<appVersion>@<digest>.
values_key() {
  case "$1" in
    ragdb) echo ragdb.image.tag ;;
    ragfr) echo migrations.image.tag ;;
    owui-init) echo openwebui.patch.image.tag ;;
    reranker) echo openwebui.reranker.image.tag ;;
    *) echo "images: no chart value for image $1" >&2; return 2 ;;
  esac
}
pin_value() {
  local key
  [[ "$2" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "images: '$2' is not a sha256 digest" >&2; return 2; }
  key="$(values_key "$1")" || return 2
  printf '%s=%s@%s\n' "$key" "$VERSION" "$2"
}

require_built() {
  local name
  for name in "${NAMES[@]}"; do
    "${PODMAN[@]}" image exists "$(ref "$name")" || { echo "images: $(ref "$name") not built: run make images" >&2; exit 3; }
  done
}

# The required images, then each optional one that is built.
present() {
  local name
  printf '%s\n' "${NAMES[@]}"
  for name in "${OPTIONAL[@]}"; do
    if "${PODMAN[@]}" image exists "$(ref "$name")"; then echo "$name"; fi
  done
}

build_reranker() {
  local t0=$SECONDS tag rc=0
  tag="$(bash "$ROOT/images/reranker/build.sh" "$@" | tail -1)" || rc=$?
  if [[ $rc == 3 ]]; then
    echo "images: reranker skipped: no trained model here (make reranker trains it; the chart's default runs no cross-encoder)" >&2
    return 0
  fi
  [[ $rc == 0 ]] || { echo "images: reranker build failed (exit $rc)" >&2; exit "$rc"; }
  if [[ "${IMAGES_SKIP_SMOKE:-}" != 1 ]]; then
    bash "$ROOT/images/reranker/smoke.sh" "$tag" >&2
  fi
  "${PODMAN[@]}" tag "$tag" "$(ref reranker)"
  echo "images: reranker built ($tag, $((SECONDS - t0)) s)" >&2
}

# Where the ragfr and owui-init images start from: the debootstrap minbase unless IMAGES_BASE says otherwise.
base_args() {
  if [[ "${IMAGES_BASE:-}" != official ]]; then echo --base; echo "${IMAGES_BASE:-$MINBASE}"; fi
}

# ragfr/ragdb and ragfr/ragfr, each smoke-tested: they need nothing but this checkout, .venv and the private
# cluster (`make test` builds them while it installs the Open WebUI venv).
build_ragdb_ragfr() {
  local ragdb_args=(--local-base) base tag t0
  mapfile -t base < <(base_args)
  # build-image.sh --local-base makes the minbase when it is missing; the other images reuse it.
  if [[ "${IMAGES_BASE:-}" == official ]]; then ragdb_args=(); fi
  t0=$SECONDS
  tag="$(bash "$ROOT/scripts/build-image.sh" "${ragdb_args[@]}" | tail -1)"
  "${PODMAN[@]}" tag "$tag" "$(ref ragdb)"
  echo "images: ragdb built ($tag, $((SECONDS - t0)) s)" >&2
  t0=$SECONDS
  tag="$(bash "$ROOT/images/ragfr/build.sh" "${base[@]}" | tail -1)"
  "${PODMAN[@]}" tag "$tag" "$(ref ragfr)"
  echo "images: ragfr built ($tag, $((SECONDS - t0)) s)" >&2
  if [[ "${IMAGES_SKIP_SMOKE:-}" != 1 ]]; then
    t0=$SECONDS
    bash "$ROOT/scripts/image-smoke.sh" "$(ref ragdb)" >&2
    bash "$ROOT/images/ragfr/smoke-host.sh" "$(ref ragfr)" >&2
    echo "images: ragdb and ragfr smoke tests passed ($((SECONDS - t0)) s)" >&2
  fi
}

# ragfr/owui-init, smoke-tested against the pristine Open WebUI of .venv-owui, then the optional reranker and
# the record of what this checkout built (after build_ragdb_ragfr).
build_owui_init() {
  local base tag t0
  mapfile -t base < <(base_args)
  t0=$SECONDS
  tag="$(bash "$ROOT/images/owui-init/build.sh" "${base[@]}" | tail -1)"
  "${PODMAN[@]}" tag "$tag" "$(ref owui-init)"
  echo "images: owui-init built ($tag, $((SECONDS - t0)) s)" >&2
  if [[ "${IMAGES_SKIP_SMOKE:-}" != 1 ]]; then
    t0=$SECONDS
    bash "$ROOT/images/owui-init/smoke.sh" "$(ref owui-init)" >&2
    echo "images: owui-init smoke test passed ($((SECONDS - t0)) s)" >&2
  fi
  build_reranker "${base[@]}"
  mkdir -p "$ROOT/.build"
  # What this checkout built, by image ID: the cluster smoke runs these even if another checkout sharing the
  # podman store re-tags <name>:<appVersion> meanwhile.
  { echo "# inputs $(inputs)"; list_ids; } | tee "$ROOT/.build/images.built"
}

# Tracked and untracked (not ignored) files the three builds read; a change to any of them means rebuild.
# migrations is named itself: src/ragfr/migrations is a symlink to it, which the file test below skips.
INPUTS=(src migrations patches images pyproject.toml scripts/build-image.sh scripts/image-smoke.sh scripts/lib.sh
        charts/ragfr/Chart.yaml)
inputs() {
  git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || { echo unknown; return; }  # not a checkout: no check
  (cd "$ROOT" && git ls-files -co --exclude-standard -- "${INPUTS[@]}" | LC_ALL=C sort -u |
    while IFS= read -r f; do [[ -f "$f" ]] && printf '%s\0' "$f"; done | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

list_ids() {
  local name
  for name in $(present); do
    printf '%s %s\n' "$(ref "$name")" "$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$(ref "$name")")"
  done
}

# The upstream images of the release, pulled into a scratch podman store (never the local one: it may hold the
# cluster smoke's stand-ins under the same names, and it is maybe shared) and written as archives named as
# containerd resolves the rendered reference. Prints the archive file names.
save_upstream() {
  local dir="$1" scratch rendered name file pulled=()
  shift
  local py="${PY:-$ROOT/.venv/bin/python}" list
  list="$("$py" -m ragfr_tools.imagesource --upstream "$@")" || { echo "images: cannot list the chart's upstream images" >&2; exit 2; }
  [[ -n "$list" ]] || return 0
  scratch="$(mktemp -d /tmp/ragfr-up-XXXXXX)"
  local store=("${PODMAN[@]}" --root "$scratch/root" --runroot "$scratch/run")
  while read -r rendered name; do
    if [[ "$name" == *@sha256:* ]]; then
      file="$(save_pinned "$dir" "$rendered" "$name" "$scratch")" || { rm -rf "$scratch"; exit 4; }
      pulled+=("$file")
      continue
    fi
    if ! "${store[@]}" pull --quiet --tls-verify="${IMAGES_TLS_VERIFY:-true}" "docker://$name" >/dev/null 2>"$scratch/err"; then
      echo "images: cannot pull $name from this machine ($(tail -1 "$scratch/err")): an air-gapped site needs it; run the save where it can be pulled, or IMAGES_UPSTREAM=0 for the ragfr images only" >&2
      "${store[@]}" rmi --all --force >/dev/null 2>&1 || true
      rm -rf "$scratch" 2>/dev/null || true
      exit 4
    fi
    # <name> is the repository's last component, <tag> what follows the last ":" (a registry's port comes before).
    file="upstream-$(basename "${name%:*}")-${name##*:}.oci.tar"
    rm -f "$dir/$file"
    "${store[@]}" push --quiet "$name" "oci-archive:$dir/$file:$name" >&2
    echo "images: wrote $dir/$file ($rendered)" >&2
    pulled+=("$file")
  done <<<"$list"
  "${store[@]}" rmi --all --force >/dev/null 2>&1 || true
  rm -rf "$scratch" 2>/dev/null || true
  if ((${#pulled[@]})); then printf '%s\n' "${pulled[@]}" >"$dir/.upstream"; fi
}

# An upstream image pinned by digest (REPO@sha256:D or REPO:TAG@sha256:D), copied registry to archive byte for
# byte: podman's pull + push recompresses the layers, so the archive's manifest digest would no longer be D and
# the node would not find the pinned image. skopeo --preserve-digests keeps it; --all keeps a multi-arch index
# (what docs/reference/images.md tells to pin) with every platform, since the index digest covers them all. Named
# REPO@sha256:D in the archive: what containerd's CRI looks a pinned reference up by (it drops the tag), so
# `k3s ctr images import` makes it usable as rendered. Prints the archive's file name.
save_pinned() {
  local dir="$1" rendered="$2" name="$3" scratch="$4" repo digest tag="" last file got
  command -v skopeo >/dev/null || {
    echo "images: $rendered is pinned by digest: saving it needs skopeo (apt-get install skopeo; make setup-apt)" >&2
    return 1; }
  digest="${name##*@}" repo="${name%@*}"
  last="${repo##*/}"
  if [[ "$last" == *:* ]]; then tag="${last##*:}-" repo="${repo%:*}"; fi
  file="upstream-$(basename "$repo")-${tag}${digest/:/-}"
  file="${file:0:$((${#file} - 52))}.oci.tar"  # sha256-<12 hex>: readable, still unique per pin
  rm -f "$dir/$file"
  if ! skopeo copy --quiet --all --preserve-digests --src-tls-verify="${IMAGES_TLS_VERIFY:-true}" \
      "docker://$repo@$digest" "oci-archive:$dir/$file:$repo@$digest" >/dev/null 2>"$scratch/err"; then
    echo "images: cannot pull $repo@$digest from this machine ($(tail -1 "$scratch/err")): an air-gapped site needs it; run the save where it can be pulled, or IMAGES_UPSTREAM=0 for the ragfr images only" >&2
    return 1
  fi
  got="$(tar -xOf "$dir/$file" index.json | grep -o '"digest": *"sha256:[0-9a-f]*"' | sed -n '1s/.*"\(sha256:[0-9a-f]*\)"/\1/p')"
  [[ "$got" == "$digest" ]] || {
    echo "images: $dir/$file holds $got, not the pinned $digest" >&2; rm -f "$dir/$file"; return 1; }
  echo "images: wrote $dir/$file ($rendered, digest kept)" >&2
  echo "$file"
}

save() {
  local dir="${1:?usage: images.sh save DIR [VALUES.yaml ...]}" name file digest names files=()
  shift
  require_built
  mapfile -t names < <(present)
  mkdir -p "$dir"
  rm -f "$dir/.upstream"
  # Upstream first: a site that cannot get them should learn it before the long part.
  if [[ "${IMAGES_UPSTREAM:-1}" != 0 ]]; then
    save_upstream "$dir" "$@"
    [[ -f "$dir/.upstream" ]] && mapfile -t files <"$dir/.upstream"
    rm -f "$dir/.upstream"
  else
    echo "images: IMAGES_UPSTREAM=0: the upstream images (Open WebUI, Ollama, ...) are not saved; the nodes must get them" >&2
  fi
  for name in "${names[@]}"; do
    file="$name-$VERSION.oci.tar"
    rm -f "$dir/$file"
    # The archive names the image localhost/ragfr/<name>:<version>, the reference the chart renders with
    # global.imageSource=imported, so `k3s ctr images import` makes it usable as rendered. Pushed to the archive
    # under that name, not tagged locally: the local store (maybe shared) is never changed.
    "${PODMAN[@]}" push --quiet "$(ref "$name")" "oci-archive:$dir/$file:$(ref "$name")" >&2
    echo "images: wrote $dir/$file" >&2
  done
  (cd "$dir" && sha256sum "${names[@]/%/-$VERSION.oci.tar}" "${files[@]}" >SHA256SUMS)
  # The manifest digest in each archive (index.json): what containerd records on import, so what pins it.
  echo "images: to pin by digest, keys for my-values.yaml (docs/reference/images.md, \"Pinning images by digest\"):" >&2
  for name in "${names[@]}"; do
    digest="$(tar -xOf "$dir/$name-$VERSION.oci.tar" index.json | grep -o '"digest": *"sha256:[0-9a-f]*"' |
      sed -n '1s/.*"\(sha256:[0-9a-f]*\)"/\1/p')" || true
    pin_value "$name" "$digest" | sed 's/^/  /' >&2 || echo "images: no manifest digest in $dir/$name-$VERSION.oci.tar" >&2
  done
  echo "images: $dir/SHA256SUMS"
  cat "$dir/SHA256SUMS"
}

push() {
  local registry="${1:?usage: images.sh push REGISTRY (host:port, as global.imageRegistry)}" name dest digest pins=()
  registry="${registry%/}"
  require_built
  for name in $(present); do
    dest="$registry/ragfr/$name:$VERSION"
    digest="$(mktemp)"
    "${PODMAN[@]}" push --quiet --tls-verify="${IMAGES_TLS_VERIFY:-true}" --digestfile "$digest" "$(ref "$name")" \
      "docker://$dest" >&2
    printf '%s %s\n' "$dest" "$(cat "$digest")"
    pins+=("$(pin_value "$name" "$(cat "$digest")")")
    rm -f "$digest"
  done
  echo "images: to pin by digest, keys for my-values.yaml (docs/reference/images.md, \"Pinning images by digest\"):" >&2
  printf '  %s\n' "${pins[@]}" >&2
}

# The images of .build/images.built still exist under their references and were built from this checkout.
current() {
  local listed="$ROOT/.build/images.built" recorded ref id
  [[ -f "$listed" ]] || return 1
  recorded="$(sed -n 's/^# inputs //p' "$listed")"
  [[ -n "$recorded" && "$recorded" == "$(inputs)" && "$recorded" != unknown ]] || return 1
  while read -r ref id; do
    [[ "$ref" == "#" ]] && continue
    [[ "$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$ref" 2>/dev/null)" == "$id" ]] || return 1
  done <"$listed"
}

case "${1:-}" in
  build) build_ragdb_ragfr; build_owui_init ;;
  build-ragdb-ragfr) build_ragdb_ragfr ;;
  build-owui-init) build_owui_init ;;
  save) shift; save "$@" ;;
  current) current ;;
  push) push "${2:-}" ;;
  list) for n in $(present); do ref "$n"; done ;;
  ids) list_ids ;;
  inputs) inputs ;;
  pin) pin_value "${2:-}" "${3:-}" ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
