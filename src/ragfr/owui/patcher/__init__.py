"""The patch engine (build and start-up time): the manifest, its edits, the markers, applying the patch and
checking it is active. `patch/` is package data: a link to patches/open-webui in a checkout, the manifest
and bodies in the wheel. Imports nothing from `ragfr.owui.runtime`."""
