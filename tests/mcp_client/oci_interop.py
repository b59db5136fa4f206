"""A second OCI client for the artifact tests (host/tests/all/artifacts.rs):
ORAS's Python client (`oras`, PyPI), nothing of ours.

    python3 oci_interop.py push --registry ADDR --target REPO:TAG --file F [--media-type T] [--config-media-type T]
        pushes F as the one layer of an artifact (by default the WebAssembly
        layout: config application/vnd.wasm.config.v0+json, layer
        application/wasm); prints {"digest": the manifest's digest}
    python3 oci_interop.py read --registry ADDR --target REPO:TAG --out F
        prints the manifest's and config's media types, the layers' media
        types and digests, and the config itself; writes the first layer to F
    python3 oci_interop.py cosign --registry ADDR --target REPO:sha256-HEX.sig --key PUB
        reads a signature manifest in cosign's layout and checks each
        signature with `cryptography` against the PEM public key PUB;
        prints each layer's media type, payload and whether it verified

The registry is reached over plain HTTP (a loopback registry of the test's).
"""

import argparse
import base64
import hashlib
import json
import os
import sys
import tempfile

import oras.client

WASM_CONFIG = "application/vnd.wasm.config.v0+json"
WASM_LAYER = "application/wasm"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["push", "read", "cosign"])
    parser.add_argument("--registry", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--file")
    parser.add_argument("--out")
    parser.add_argument("--key")
    parser.add_argument("--media-type", default=WASM_LAYER)
    parser.add_argument("--config-media-type", default=WASM_CONFIG)
    args = parser.parse_args()
    client = oras.client.OrasClient(hostname=args.registry, insecure=True)
    target = f"{args.registry}/{args.target}"
    if args.action == "push":
        data = open(args.file, "rb").read()
        layer_digest = "sha256:" + hashlib.sha256(data).hexdigest()
        with tempfile.TemporaryDirectory() as work:
            config = os.path.join(work, "config.json")
            with open(config, "w") as f:
                json.dump(
                    {
                        "created": "2026-12-04T00:00:00Z",
                        "architecture": "wasm",
                        "os": "wasip2",
                        "layerDigests": [layer_digest],
                    },
                    f,
                )
            response = client.push(
                target=target,
                files=[f"{args.file}:{args.media_type}"],
                manifest_config=f"{config}:{args.config_media_type}",
                disable_path_validation=True,
                quiet=True,
            )
        print(json.dumps({"digest": response.headers.get("Docker-Content-Digest")}))
        return 0
    manifest = client.get_manifest(target)
    container = client.get_container(target)
    if args.action == "cosign":
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = serialization.load_pem_public_key(open(args.key, "rb").read())
        seen = []
        with tempfile.TemporaryDirectory() as work:
            for i, layer in enumerate(manifest["layers"]):
                out = os.path.join(work, str(i))
                client.download_blob(container, layer["digest"], out)
                payload = open(out, "rb").read()
                signature = (layer.get("annotations") or {}).get(
                    "dev.cosignproject.cosign/signature", ""
                )
                try:
                    key.verify(
                        base64.b64decode(signature), payload, ec.ECDSA(hashes.SHA256())
                    )
                    verified = True
                except (InvalidSignature, ValueError):
                    verified = False
                seen.append(
                    {
                        "media_type": layer["mediaType"],
                        "payload": json.loads(payload),
                        "verified": verified,
                    }
                )
        print(json.dumps({"layers": seen}))
        return 0
    with tempfile.TemporaryDirectory() as work:
        config_file = os.path.join(work, "config.json")
        client.download_blob(container, manifest["config"]["digest"], config_file)
        config = json.load(open(config_file))
    client.download_blob(container, manifest["layers"][0]["digest"], args.out)
    print(
        json.dumps(
            {
                "media_type": manifest.get("mediaType"),
                "config_media_type": manifest["config"]["mediaType"],
                "layers": [
                    {"media_type": l["mediaType"], "digest": l["digest"]}
                    for l in manifest["layers"]
                ],
                "config": config,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
