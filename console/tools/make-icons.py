#!/usr/bin/env python3
"""Draws the console's icons (SVG and PNG) from one shape description:
a blue tile, a white speech bubble, a blue check mark. Pure standard
library: the PNGs are rasterised here with 4x4 supersampling."""
import math
import os
import struct
import sys
import zlib

BLUE = (0x1F, 0x5F, 0xA8)
WHITE = (0xFF, 0xFF, 0xFF)

# Geometry in a 100x100 box.
TILE_R = 22
BUBBLE = (18, 20, 82, 68, 12)          # x0, y0, x1, y1, corner radius
TAIL = [(30, 66), (30, 84), (48, 66)]  # the bubble's tail
CHECK = [(33, 45), (45, 56), (67, 33)]
CHECK_W = 7.5


def rounded_rect(x, y, x0, y0, x1, y1, r):
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def in_triangle(x, y, tri):
    (ax, ay), (bx, by), (cx, cy) = tri
    d1 = (x - bx) * (ay - by) - (ax - bx) * (y - by)
    d2 = (x - cx) * (by - cy) - (bx - cx) * (y - cy)
    d3 = (x - ax) * (cy - ay) - (cx - ax) * (y - ay)
    neg = d1 < 0 or d2 < 0 or d3 < 0
    pos = d1 > 0 or d2 > 0 or d3 > 0
    return not (neg and pos)


def near_polyline(x, y, pts, half):
    for (ax, ay), (bx, by) in zip(pts, pts[1:]):
        dx, dy = bx - ax, by - ay
        t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
        px, py = ax + t * dx, ay + t * dy
        if (x - px) ** 2 + (y - py) ** 2 <= half * half:
            return True
    return False


def colour_at(x, y, full_bleed):
    """RGBA of the point (x, y) in the 100-box."""
    if not full_bleed and not rounded_rect(x, y, 0, 0, 100, 100, TILE_R):
        return None
    if near_polyline(x, y, CHECK, CHECK_W / 2):
        return BLUE
    if rounded_rect(x, y, *BUBBLE) or in_triangle(x, y, TAIL):
        return WHITE
    return BLUE


def render(size, full_bleed=False, inset=0.0):
    rows = []
    n = 4
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            acc = [0, 0, 0, 0]
            for sy in range(n):
                for sx in range(n):
                    u = (px + (sx + 0.5) / n) / size * 100
                    v = (py + (sy + 0.5) / n) / size * 100
                    if inset:
                        # Maskable icons keep the drawing in the safe zone.
                        u = 50 + (u - 50) / (1 - inset)
                        v = 50 + (v - 50) / (1 - inset)
                        c = colour_at(u, v, True) if 0 <= u <= 100 and 0 <= v <= 100 else BLUE
                    else:
                        c = colour_at(u, v, full_bleed)
                    if c is not None:
                        acc[0] += c[0]
                        acc[1] += c[1]
                        acc[2] += c[2]
                        acc[3] += 255
            k = n * n
            a = acc[3] // k
            if a:
                row += bytes([acc[0] * 255 // acc[3], acc[1] * 255 // acc[3], acc[2] * 255 // acc[3], a])
            else:
                row += bytes([0, 0, 0, 0])
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def svg():
    x0, y0, x1, y1, r = BUBBLE
    tail = " ".join(f"{x},{y}" for x, y in TAIL)
    check = " ".join(f"{x},{y}" for x, y in CHECK)
    return f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100" role="img" aria-label="AEP console">
  <rect width="100" height="100" rx="{TILE_R}" fill="#1f5fa8"/>
  <rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" rx="{r}" fill="#fff"/>
  <polygon points="{tail}" fill="#fff"/>
  <polyline points="{check}" fill="none" stroke="#1f5fa8" stroke-width="{CHECK_W}" stroke-linecap="round" stroke-linejoin="round"/>
</svg>
"""


def main(out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "icon.svg"), "w") as f:
        f.write(svg())
    for size in (192, 512):
        with open(os.path.join(out, f"icon-{size}.png"), "wb") as f:
            f.write(render(size))
    with open(os.path.join(out, "maskable-512.png"), "wb") as f:
        f.write(render(512, inset=0.2))
    with open(os.path.join(out, "apple-touch-icon.png"), "wb") as f:
        f.write(render(180, full_bleed=True))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "www/icons")
