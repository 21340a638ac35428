"""The drawn parts of a synthetic face, back to front: each draws one part on the supersampled canvas from the
head's geometry (``Head``) and its own random stream (``synthetic_render.render_face`` calls them in layer order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import ImageDraw

# The head is laid out in unit coordinates, then magnified about the image centre so that, as in CelebA's
# aligned crops, the face fills most of the central square.
ZOOM = 1.3
LIPSTICK = ((190, 20, 45), (200, 60, 110), (140, 20, 50), (215, 75, 75))


@dataclass(frozen=True)
class Canvas:
    """The supersampled canvas and its coordinate maps: unit coordinates, zoomed about the centre, to pixels."""

    draw: ImageDraw.ImageDraw
    size: int

    def px(self, v: float) -> float:  # unit coordinates -> canvas pixels (x and y alike), zoomed about the centre
        return (0.5 + (v - 0.5) * ZOOM) * self.size

    def ln(self, v: float) -> float:  # unit lengths (line widths, radii) -> canvas pixels
        return v * ZOOM * self.size


@dataclass(frozen=True)
class Head:
    """The head's geometry and colours (unit coordinates; the pose jitter comes at the end)."""

    cx: float
    cy: float
    fw: float
    fh: float
    skin: tuple
    shade: tuple
    stubble_alpha: int
    eye_y: float
    brow_y: float
    eye_dx: float
    nose_y: float
    mouth_y: float
    age: float
    hair_color: tuple | None
    facial_hair_color: tuple
    wavy: bool
    straight: bool
    long_hair: bool


def jitter(color, amount: float, g: np.random.Generator):
    return tuple(min(255, max(0, int(c + d))) for c, d in zip(color, g.normal(0.0, amount, size=3)))


def random_color(g: np.random.Generator, low: int = 20, high: int = 236):
    return tuple(int(v) for v in g.integers(low, high, size=3))


def mix(c1, c2, t: float):
    return tuple(round(x + (y - x) * t) for x, y in zip(c1, c2))


def hair_edge(canvas: Canvas, h: Head, hair: np.random.Generator, x0, y0, x1, y1, amplitude):
    """Points of a vertical hair edge from (x0, y0) to (x1, y1): wavy hair undulates, straight does not."""
    px = canvas.px
    waves = amplitude * (1.0 if h.wavy else 0.0 if h.straight else 0.35)
    phase = hair.uniform(0, 2 * math.pi)
    return [
        (px(x0 + (x1 - x0) * t + waves * math.sin(phase + 5 * math.pi * t)), px(y0 + (y1 - y0) * t))
        for t in (k / 8 for k in range(9))
    ]


def body_and_neckwear(canvas: Canvas, a, h: Head, cloth, hair: np.random.Generator, neck: np.random.Generator):
    """Shoulders, long hair behind the head, the neck, a necktie with its collar, a necklace."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    draw.ellipse([px(cx - 0.42), px(cy + fh + 0.06), px(cx + 0.42), px(cy + fh + 0.7)], fill=cloth)
    if h.long_hair:  # hair behind the head, down to the shoulders
        left = hair_edge(canvas, h, hair, cx - fw * 1.25, cy - 0.2 * fh, cx - fw * 1.35, cy + fh * 1.45, 0.03)
        right = hair_edge(canvas, h, hair, cx + fw * 1.35, cy + fh * 1.45, cx + fw * 1.25, cy - 0.2 * fh, 0.03)
        draw.polygon(left + right, fill=h.hair_color)
        draw.ellipse([px(cx - fw * 1.25), px(cy - fh * 1.12), px(cx + fw * 1.25), px(cy + fh * 0.4)], fill=h.hair_color)
    draw.rectangle([px(cx - 0.45 * fw), px(cy + 0.6 * fh), px(cx + 0.45 * fw), px(cy + fh + 0.12)], fill=h.shade)
    if a["Wearing_Necktie"]:
        collar = jitter((235, 235, 235), 8, neck)
        draw.polygon(
            [
                (px(cx - 0.5 * fw), px(cy + fh + 0.06)),
                (px(cx), px(cy + fh + 0.16)),
                (px(cx + 0.5 * fw), px(cy + fh + 0.06)),
                (px(cx + 0.6 * fw), px(cy + fh + 0.13)),
                (px(cx - 0.6 * fw), px(cy + fh + 0.13)),
            ],
            fill=collar,
        )
        tie = random_color(neck)
        draw.polygon(
            [
                (px(cx - 0.06), px(cy + fh + 0.11)),
                (px(cx + 0.06), px(cy + fh + 0.11)),
                (px(cx + 0.08), px(cy + fh + 0.3)),
                (px(cx), px(cy + fh + 0.38)),
                (px(cx - 0.08), px(cy + fh + 0.3)),
            ],
            fill=tie,
        )
        draw.polygon(
            [
                (px(cx - 0.045), px(cy + fh + 0.06)),
                (px(cx + 0.045), px(cy + fh + 0.06)),
                (px(cx + 0.03), px(cy + fh + 0.12)),
                (px(cx - 0.03), px(cy + fh + 0.12)),
            ],
            fill=tie,
        )
    if a["Wearing_Necklace"]:
        metal = jitter((212, 175, 55) if neck.uniform() < 0.6 else (200, 200, 205), 10, neck)
        box = [px(cx - 0.55 * fw), px(cy + fh - 0.04), px(cx + 0.55 * fw), px(cy + fh + 0.09)]
        draw.arc(box, 20, 160, fill=metal, width=max(2, round(ln(0.012))))


def ears_and_face(canvas: Canvas, a, h: Head, ears: np.random.Generator):
    """Ears (with earrings), the face, a male jaw, chin, cheekbones, rosy cheeks, age lines."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, cy, fw, fh, shade, skin = h.cx, h.cy, h.fw, h.fh, h.shade, h.skin
    for side in (-1, 1):
        ex = cx + side * fw * 0.98
        draw.ellipse([px(ex - 0.03), px(h.eye_y - 0.04), px(ex + 0.03), px(h.nose_y + 0.01)], fill=shade)
        if a["Wearing_Earrings"]:
            metal = jitter((220, 185, 60) if ears.uniform() < 0.6 else (215, 215, 220), 10, ears)
            r = 0.012 * ears.uniform(1.0, 1.6)
            ey = h.nose_y + 0.015 + r
            if ears.uniform() < 0.5:
                draw.ellipse(
                    [px(ex - r), px(ey - r), px(ex + r), px(ey + r)], outline=metal, width=max(1, round(ln(0.008)))
                )
            else:
                draw.ellipse([px(ex - r * 0.7), px(ey - r), px(ex + r * 0.7), px(ey + r * 0.4)], fill=metal)
    draw.ellipse([px(cx - fw), px(cy - fh), px(cx + fw), px(cy + fh)], fill=skin)
    if a["Male"]:  # a squarer jaw
        draw.rounded_rectangle(
            [px(cx - 0.8 * fw), px(cy + 0.2 * fh), px(cx + 0.8 * fw), px(cy + 0.9 * fh)],
            radius=ln(0.45 * fw),
            fill=skin,
        )
    if a["Double_Chin"]:
        draw.arc(
            [px(cx - 0.5 * fw), px(cy + 0.78 * fh), px(cx + 0.5 * fw), px(cy + 1.12 * fh)],
            20,
            160,
            fill=shade + (200,),
            width=max(2, round(ln(0.01))),
        )
        draw.chord([px(cx - 0.45 * fw), px(cy + 0.82 * fh), px(cx + 0.45 * fw), px(cy + 1.16 * fh)], 0, 180, fill=skin)
    cheeks(canvas, a, h)
    age_lines(canvas, h)


def cheeks(canvas: Canvas, a, h: Head):
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    if a["High_Cheekbones"]:
        for side in (-1, 1):
            hx = cx + side * 0.55 * fw
            draw.ellipse(
                [px(hx - 0.22 * fw), px(cy + 0.02 * fh), px(hx + 0.22 * fw), px(cy + 0.16 * fh)],
                fill=(255, 255, 255, 45),
            )
            draw.arc(
                [px(hx - 0.3 * fw), px(cy + 0.02 * fh), px(hx + 0.3 * fw), px(cy + 0.42 * fh)],
                30,
                150,
                fill=h.shade + (110,),
                width=max(1, round(ln(0.007))),
            )
    if a["Rosy_Cheeks"]:
        for side in (-1, 1):
            hx = cx + side * 0.55 * fw
            draw.ellipse(
                [px(hx - 0.2 * fw), px(cy + 0.12 * fh), px(hx + 0.2 * fw), px(cy + 0.36 * fh)], fill=(230, 80, 90, 70)
            )


def age_lines(canvas: Canvas, h: Head):
    """Faint forehead and smile lines, the only direct trace of age."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    wrinkles = float(np.clip((h.age - 0.4) / 1.6, 0.0, 1.0))
    if wrinkles > 0:
        line = h.shade + (int(150 * wrinkles),)
        for k in range(3):
            y = cy - (0.52 + 0.08 * k) * fh
            draw.line([(px(cx - 0.4 * fw), px(y)), (px(cx + 0.4 * fw), px(y))], fill=line, width=1)
        for side in (-1, 1):
            draw.line(
                [(px(cx + side * 0.25 * fw), px(h.nose_y - 0.02)), (px(cx + side * 0.42 * fw), px(h.mouth_y + 0.02))],
                fill=line,
                width=max(1, round(ln(0.006))),
            )


def facial_hair(canvas: Canvas, a, h: Head):
    """Stubble, a full beard, a goatee, sideburns: over the skin, under the mouth."""
    draw, px = canvas.draw, canvas.px
    cx, cy, fw, fh, color = h.cx, h.cy, h.fw, h.fh, h.facial_hair_color
    lower_face = [px(cx - fw), px(cy - fh * 0.2), px(cx + fw), px(cy + fh * 1.02)]
    if a["5_o_Clock_Shadow"]:
        draw.chord(lower_face, 5, 175, fill=(40, 35, 35, h.stubble_alpha))
    beard = not a["No_Beard"]
    if beard and not a["Goatee"] and not a["Mustache"]:  # a full beard along the jaw
        draw.chord(lower_face, 0, 180, fill=color)
        draw.ellipse([px(cx - 0.45 * fw), px(h.nose_y + 0.02), px(cx + 0.45 * fw), px(h.mouth_y + 0.07)], fill=h.skin)
    if a["Goatee"]:
        draw.ellipse([px(cx - 0.3 * fw), px(h.mouth_y + 0.02), px(cx + 0.3 * fw), px(cy + fh * 1.0)], fill=color)
    if a["Sideburns"]:
        for side in (-1, 1):
            x0 = cx + side * 0.96 * fw
            draw.polygon(
                [
                    (px(x0), px(h.eye_y - 0.03)),
                    (px(x0 - side * 0.05), px(h.eye_y - 0.03)),
                    (px(x0 - side * 0.06), px(h.nose_y + 0.03)),
                    (px(x0 - side * 0.01), px(h.nose_y + 0.03)),
                ],
                fill=color,
            )


def scalp_hair(canvas: Canvas, a, h: Head, hair: np.random.Generator):
    """Hair on the head: the cap and its hairline, temples, curls or strands, bangs, locks framing the face."""
    draw, px = canvas.draw, canvas.px
    cx, cy, fw, fh, color = h.cx, h.cy, h.fw, h.fh, h.hair_color
    hairline = 0.52 + (0.2 if a["Receding_Hairline"] else 0.0)
    alpha = math.degrees(math.asin(min(hairline, 0.98)))
    cap = [px(cx - fw * 1.06), px(cy - fh * 1.1), px(cx + fw * 1.06), px(cy + fh * 1.02)]
    draw.chord(cap, 180 + alpha, 360 - alpha, fill=color)
    if not h.long_hair:  # short hair: a little over the temples
        for side in (-1, 1):
            x0 = cx + side * fw
            draw.polygon(
                [
                    (px(x0), px(cy - 0.55 * fh)),
                    (px(x0 + side * 0.015), px(cy - 0.55 * fh)),
                    (px(x0 + side * 0.01), px(h.brow_y)),
                    (px(x0 - side * 0.012), px(h.brow_y)),
                ],
                fill=color,
            )
    if a["Receding_Hairline"]:  # bare temples: an M-shaped hairline
        for side in (-1, 1):
            tx = cx + side * 0.5 * fw
            draw.ellipse([px(tx - 0.22 * fw), px(cy - 0.98 * fh), px(tx + 0.22 * fw), px(cy - 0.55 * fh)], fill=h.skin)
    hair_texture(canvas, h)
    if a["Bangs"]:
        teeth = 7
        edge = [(px(cx - 0.9 * fw), px(cy - 0.75 * fh))]
        for k in range(teeth + 1):
            x = cx - 0.85 * fw + 1.7 * fw * k / teeth
            y = h.brow_y - (0.035 if k % 2 == 0 else 0.012) - (0.0 if h.straight else hair.uniform(0, 0.015))
            edge.append((px(x), px(y)))
        edge.append((px(cx + 0.9 * fw), px(cy - 0.75 * fh)))
        draw.polygon(edge, fill=color)
    if h.long_hair:  # locks framing the face
        for side in (-1, 1):
            pts = hair_edge(
                canvas, h, hair, cx + side * 0.95 * fw, cy - 0.6 * fh, cx + side * 1.05 * fw, cy + 0.9 * fh, 0.012
            )
            pts += hair_edge(
                canvas, h, hair, cx + side * 1.3 * fw, cy + 1.2 * fh, cx + side * 1.2 * fw, cy - 0.6 * fh, 0.02
            )
            draw.polygon(pts, fill=color)


def hair_texture(canvas: Canvas, h: Head):
    """Curls along the crown (wavy), or faint parallel strands combed back over it (straight)."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    if h.wavy:
        for t in range(200, 341, 20):
            r = 0.035
            x = cx + fw * 1.02 * math.cos(math.radians(t))
            y = cy - 0.04 + fh * 1.02 * math.sin(math.radians(t))
            draw.ellipse([px(x - r), px(y - r), px(x + r), px(y + r)], fill=h.hair_color)
    if h.straight:
        sheen = mix(h.hair_color, (255, 255, 255), 0.3) + (110,)
        for k in (-2, -1, 0, 1, 2):
            x = cx + k * 0.18 * fw
            draw.line(
                [(px(x), px(cy - 1.02 * fh)), (px(x + 0.04 * k * fw), px(cy - 0.62 * fh))],
                fill=sheen,
                width=max(1, round(ln(0.006))),
            )


def bald_scalp(canvas: Canvas, h: Head, hair: np.random.Generator):
    """A shine on the scalp, sometimes a fringe above the ears."""
    draw, px = canvas.draw, canvas.px
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    draw.ellipse(
        [px(cx - 0.4 * fw), px(cy - 0.95 * fh), px(cx + 0.1 * fw), px(cy - 0.7 * fh)], fill=(255, 255, 255, 60)
    )
    if hair.uniform() < 0.6:
        for side in (-1, 1):
            x0 = cx + side * 0.98 * fw
            draw.ellipse(
                [px(x0 - 0.03), px(h.brow_y - 0.04), px(x0 + 0.03), px(h.eye_y + 0.03)], fill=h.facial_hair_color
            )


def draw_hat(canvas: Canvas, h: Head, hat: np.random.Generator):
    """A brimmed hat, a cap with a visor or a beanie."""
    draw, px = canvas.draw, canvas.px
    cx, cy, fw, fh = h.cx, h.cy, h.fw, h.fh
    hat_color = random_color(hat, 10, 246)
    kind = hat.uniform()
    top = cy - fh * 1.35
    brim_y = cy - fh * hat.uniform(0.55, 0.7)
    draw.chord([px(cx - fw * 1.12), px(top), px(cx + fw * 1.12), px(brim_y + (brim_y - top))], 180, 360, fill=hat_color)
    if kind < 0.45:  # brimmed hat
        draw.ellipse([px(cx - fw * 1.6), px(brim_y - 0.03), px(cx + fw * 1.6), px(brim_y + 0.03)], fill=hat_color)
    elif kind < 0.8:  # cap with a visor
        draw.ellipse(
            [px(cx - fw * 1.0), px(brim_y - 0.02), px(cx + fw * 1.1), px(brim_y + 0.045)],
            fill=jitter(hat_color, 20, hat),
        )
    else:  # beanie: a folded band
        draw.rectangle(
            [px(cx - fw * 1.1), px(brim_y - 0.05), px(cx + fw * 1.1), px(brim_y)], fill=jitter(hat_color, 25, hat)
        )


def eyes_and_brows(canvas: Canvas, a, h: Head, head: np.random.Generator, makeup: np.random.Generator):
    """Eye shadow, eye bags, the eyes, the brows; returns the eye's half width and half height."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, fw, eye_y, brow_y = h.cx, h.fw, h.eye_y, h.brow_y
    narrow = 0.5 if a["Narrow_Eyes"] else 1.0
    ew, eh = 0.2 * fw, 0.1 * fw * narrow * (0.85 if a["Smiling"] else 1.0)
    iris = jitter(((60, 40, 25), (40, 80, 120), (70, 100, 60), (30, 25, 20))[int(head.integers(4))], 8, head)
    shadow = jitter(((120, 70, 130), (90, 60, 50), (60, 90, 140), (150, 100, 80))[int(makeup.integers(4))], 10, makeup)
    brow_color = mix(h.facial_hair_color, (20, 15, 15), 0.5 if a["Bushy_Eyebrows"] else 0.25)
    for side in (-1, 1):
        ex = cx + side * h.eye_dx
        if a["Heavy_Makeup"]:
            draw.ellipse(
                [px(ex - ew * 1.2), px(eye_y - eh - 0.035), px(ex + ew * 1.2), px(eye_y + eh * 0.3)],
                fill=shadow + (140,),
            )
        if a["Bags_Under_Eyes"]:
            draw.arc(
                [px(ex - ew), px(eye_y - eh), px(ex + ew), px(eye_y + eh + 0.03)],
                20,
                160,
                fill=h.shade + (170,),
                width=max(2, round(ln(0.008))),
            )
        draw.ellipse(
            [px(ex - ew), px(eye_y - eh), px(ex + ew), px(eye_y + eh)],
            fill=(245, 245, 240),
            outline=(20, 15, 15) if a["Heavy_Makeup"] else None,
            width=max(1, round(ln(0.006))),
        )
        r = min(eh, ew) * 0.95
        draw.ellipse([px(ex - r), px(eye_y - r), px(ex + r), px(eye_y + r)], fill=iris)
        lift = 0.035 if a["Arched_Eyebrows"] else 0.01
        thick = round(ln(0.017 if a["Bushy_Eyebrows"] else 0.009))
        inner, outer = ex - side * ew * 1.1, ex + side * ew * 1.2
        draw.line(
            [
                (px(inner), px(brow_y + 0.005)),
                (px(ex + side * ew * 0.2), px(brow_y - lift)),
                (px(outer), px(brow_y + 0.012)),
            ],
            fill=brow_color,
            width=max(1, thick),
            joint="curve",
        )
    return ew, eh


def nose(canvas: Canvas, a, h: Head):
    draw, px = canvas.draw, canvas.px
    cx = h.cx
    nose_w = 0.17 * h.fw * (1.45 if a["Big_Nose"] else 1.0) * (0.7 if a["Pointy_Nose"] else 1.0)
    tip_y = h.nose_y + (0.025 if a["Big_Nose"] else 0.0) + (0.02 if a["Pointy_Nose"] else 0.0)
    draw.polygon(
        [(px(cx), px(h.eye_y + 0.02)), (px(cx + nose_w), px(tip_y)), (px(cx - nose_w), px(tip_y))],
        fill=h.shade + (150,),
    )
    for side in (-1, 1):
        nx = cx + side * nose_w * 0.5
        draw.ellipse([px(nx - 0.01), px(tip_y - 0.012), px(nx + 0.01), px(tip_y + 0.004)], fill=(60, 30, 25, 140))


def mouth(canvas: Canvas, a, h: Head, head: np.random.Generator, makeup: np.random.Generator):
    """Lips (with lipstick), an open or smiling mouth with teeth, a mustache over it."""
    draw, px = canvas.draw, canvas.px
    cx, mouth_y = h.cx, h.mouth_y
    mw = 0.36 * h.fw * (1.12 if a["Smiling"] else 1.0) * head.uniform(0.93, 1.07)
    lip = 0.018 * (1.7 if a["Big_Lips"] else 1.0)
    if a["Wearing_Lipstick"]:
        lip_color = jitter(LIPSTICK[int(makeup.integers(len(LIPSTICK)))], 10, makeup)
    else:
        lip_color = mix(h.skin, (150, 70, 70), 0.45)
    curve = 0.03 if a["Smiling"] else 0.0
    opening = 0.02 if a["Mouth_Slightly_Open"] else 0.0
    left, right = cx - mw, cx + mw
    corner_y = mouth_y - curve
    upper = [
        (px(left), px(corner_y)),
        (px(cx - mw * 0.4), px(mouth_y - lip)),
        (px(cx), px(mouth_y - lip * 0.6)),
        (px(cx + mw * 0.4), px(mouth_y - lip)),
        (px(right), px(corner_y)),
        (px(cx), px(mouth_y + curve * 0.3)),
    ]
    lower = [
        (px(left), px(corner_y)),
        (px(cx), px(mouth_y + curve + opening)),
        (px(right), px(corner_y)),
        (px(cx), px(mouth_y + curve + opening + lip * 1.1)),
    ]
    if opening or a["Smiling"]:
        gap = [
            (px(left + 0.01), px(corner_y)),
            (px(cx), px(mouth_y + curve * 0.3)),
            (px(right - 0.01), px(corner_y)),
            (px(cx), px(mouth_y + curve + opening)),
        ]
        draw.polygon(gap, fill=(60, 20, 25))
        if a["Smiling"]:
            draw.polygon(gap[:3] + [(px(cx), px(mouth_y + curve * 0.3 + opening * 0.5 + 0.008))], fill=(235, 232, 225))
    draw.polygon(upper, fill=lip_color)
    draw.polygon([lower[0], lower[1], lower[2], lower[3]], fill=lip_color)
    if a["Mustache"]:
        draw.polygon(
            [
                (px(cx - mw * 1.15), px(mouth_y - lip + 0.004)),
                (px(cx), px(h.nose_y + 0.035)),
                (px(cx + mw * 1.15), px(mouth_y - lip + 0.004)),
                (px(cx), px(mouth_y - lip * 0.6 - 0.003)),
            ],
            fill=h.facial_hair_color,
        )


def eyeglasses(canvas: Canvas, h: Head, ew: float, eh: float, glasses: np.random.Generator):
    """Glasses or sunglasses, last: they sit in front of everything."""
    draw, px, ln = canvas.draw, canvas.px, canvas.ln
    cx, eye_y, eye_dx = h.cx, h.eye_y, h.eye_dx
    frames = ((20, 20, 20), (90, 60, 30), (160, 160, 165), (120, 20, 30))
    frame = jitter(frames[int(glasses.integers(4))], 10, glasses)
    sun = glasses.uniform() < 0.2
    width = max(2, round(ln(0.011)))
    gr, gh = ew * 1.45, max(eh * 1.6, 0.035)
    for side in (-1, 1):
        ex = cx + side * eye_dx
        box = [px(ex - gr), px(eye_y - gh), px(ex + gr), px(eye_y + gh)]
        fill = (20, 20, 25, 215) if sun else None
        if glasses.uniform() < 0.5:
            draw.rounded_rectangle(box, radius=ln(0.015), outline=frame, width=width, fill=fill)
        else:
            draw.ellipse(box, outline=frame, width=width, fill=fill)
    draw.line([(px(cx - eye_dx + gr), px(eye_y)), (px(cx + eye_dx - gr), px(eye_y))], fill=frame, width=width)


__all__ = [
    "Canvas",
    "Head",
    "age_lines",
    "bald_scalp",
    "body_and_neckwear",
    "cheeks",
    "draw_hat",
    "ears_and_face",
    "eyeglasses",
    "eyes_and_brows",
    "facial_hair",
    "hair_edge",
    "hair_texture",
    "jitter",
    "mix",
    "mouth",
    "nose",
    "random_color",
    "scalp_hair",
]
