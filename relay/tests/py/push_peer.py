"""What a real push service and browser check of a Web Push request, done
with Mozilla's implementations (py-vapid, http-ece): the VAPID JWT
verifies with the key in the header, which is the relay's; its audience
is the push service's origin; it expires within 24 hours and names a
contact; the body decrypts (RFC 8291 aes128gcm) with the subscription's
private key and auth secret.

One JSON object a line on stdin ({authorization, expected_key, audience,
body, private_key, auth}, binary fields base64url); one answer a line on
stdout: {"ok": true, "claims": ..., "payload": ...} or {"ok": false,
"error": ...}.
"""

import base64
import json
import sys
import time

import http_ece
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import jwt as vapid_jwt


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def vapid_claims(header, expected_key, audience):
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise ValueError("not a vapid Authorization: " + scheme)
    parts = dict(p.strip().split("=", 1) for p in params.split(","))
    if parts["k"] != expected_key:
        raise ValueError("k is not the relay's public key")
    head = json.loads(b64(parts["t"].split(".")[0]))
    if head.get("alg") != "ES256":
        raise ValueError("alg is " + str(head.get("alg")))
    claims = vapid_jwt.decode(parts["t"], parts["k"])
    if claims.get("aud") != audience:
        raise ValueError("aud %r is not %r" % (claims.get("aud"), audience))
    now = time.time()
    if not (now < claims["exp"] <= now + 24 * 3600):
        raise ValueError("exp is not within 24 hours")
    if not claims.get("sub"):
        raise ValueError("no sub")
    return claims


def decrypt(body, private_key, auth):
    d = int.from_bytes(b64(private_key), "big")
    key = ec.derive_private_key(d, ec.SECP256R1())
    return http_ece.decrypt(b64(body), private_key=key, auth_secret=b64(auth), version="aes128gcm")


for line in sys.stdin:
    req = json.loads(line)
    try:
        claims = vapid_claims(req["authorization"], req["expected_key"], req["audience"])
        plain = decrypt(req["body"], req["private_key"], req["auth"])
        print(json.dumps({"ok": True, "claims": claims, "payload": json.loads(plain)}), flush=True)
    except Exception as e:  # the test reports what failed
        print(json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, e)}), flush=True)
