"""Draw one synthetic face whose 40 CelebA attributes are visible cues.

``render_face`` paints at twice the output size with ``PIL.ImageDraw`` (shapes scale with the size, so any
``image_size`` works), applies pose jitter (rotation, scale, shift), box-downsamples (antialiasing), then
blur, lighting and sensor noise. Every random choice comes from the generator passed in, so an image is a
pure function of (attributes, latents, size, seed). The random draws are split into independent streams per
part of the picture (scene, head, hair, neckwear, ears, hat, glasses, make-up), so toggling one attribute
leaves the nuisance draws of every other part -- pose, background, colours -- unchanged.

How visible each attribute is, by design (as in real CelebA, some are easy and some hard):

* strong cues: Male (hair length, jaw, facial hair, make-up), Eyeglasses, Wearing_Hat, Bald, Bangs, Smiling,
  Mouth_Slightly_Open, Wearing_Lipstick, Heavy_Makeup, Black/Blond/Gray hair, No_Beard, Goatee, Mustache,
  Wearing_Necktie, Blurry;
* subtle (small or low-contrast): Brown_Hair (shares its range with unlabelled dark-brown/auburn/dark-blond
  hair), Straight/Wavy_Hair (edge waviness), Receding_Hairline, Sideburns, 5_o_Clock_Shadow (faint stubble
  tint), Arched/Bushy_Eyebrows, Narrow_Eyes, Bags_Under_Eyes, Big/Pointy_Nose, Big_Lips, Rosy_Cheeks,
  High_Cheekbones, Pale_Skin (next to light skin), Chubby/Double_Chin, Oval_Face (face aspect ratio),
  Wearing_Earrings (a dot or ring of ~1 px at 64 px), Wearing_Necklace;
* not drawn at all: Attractive and Young, which show only through what they correlate with (make-up, face
  shape, eye bags, gray hair, and a faint wrinkle pattern that grows with the age latent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

_SUPERSAMPLE = 2
# The head is laid out in unit coordinates, then magnified about the image centre so that, as in CelebA's
# aligned crops, the face fills most of the central square.
_ZOOM = 1.3

# Hair colours: the four labelled ones, and the unlabelled ones that fall between them (CelebA leaves hair
# colour unlabelled for about a third of its images: red, auburn, dark brown, dark blond, dyed...).
_HAIR = {
    "Black_Hair": (28, 24, 24),
    "Blond_Hair": (222, 190, 122),
    "Brown_Hair": (112, 72, 42),
    "Gray_Hair": (170, 168, 166),
}
_UNLABELLED_HAIR = ((150, 62, 32), (72, 48, 34), (165, 125, 75), (95, 70, 55), (60, 40, 40))
_SKIN_LIGHT, _SKIN_DARK, _SKIN_PALE = (234, 198, 170), (112, 74, 50), (246, 228, 218)
_LIPSTICK = ((190, 20, 45), (200, 60, 110), (140, 20, 50), (215, 75, 75))


def render_face(attributes: Mapping[str, bool], latents: Mapping[str, float], image_size: int,
                rng: np.random.Generator) -> Image.Image:
    """An RGB ``image_size`` x ``image_size`` face showing ``attributes`` (name -> present).

    ``latents`` gives the continuous ``age`` and ``build`` of ``synthetic_attributes`` (faint wrinkles, face
    width). ``rng`` supplies every other random choice: colours, shapes, pose, background, blur, noise.
    """
    a = attributes
    size = image_size * _SUPERSAMPLE
    scene, head, hair, neck, ears, hat, glasses, makeup = rng.spawn(8)
    u = scene.uniform

    def px(v: float) -> float:  # unit coordinates -> canvas pixels (x and y alike), zoomed about the centre
        return (0.5 + (v - 0.5) * _ZOOM) * size

    def ln(v: float) -> float:  # unit lengths (line widths, radii) -> canvas pixels
        return v * _ZOOM * size

    def jitter(color, amount: float, g: np.random.Generator):
        return tuple(min(255, max(0, int(c + d))) for c, d in zip(color, g.normal(0.0, amount, size=3)))

    def random_color(g: np.random.Generator, low: int = 20, high: int = 236):
        return tuple(int(v) for v in g.integers(low, high, size=3))

    def mix(c1, c2, t: float):
        return tuple(round(x + (y - x) * t) for x, y in zip(c1, c2))

    # ---- background: a random base colour and a few large low-contrast shapes
    bg = random_color(scene, 30, 226)
    img = Image.new("RGB", (size, size), bg)
    draw = ImageDraw.Draw(img, "RGBA")
    for _ in range(int(scene.integers(1, 4))):
        x0, y0 = u(-0.3, 0.8, size=2)
        w, h = u(0.2, 0.8, size=2)
        shape = draw.ellipse if u() < 0.5 else draw.rectangle
        shape([px(x0), px(y0), px(x0 + w), px(y0 + h)], fill=jitter(bg, 40, scene) + (int(u(60, 200)),))
    cloth = random_color(scene)

    # ---- geometry of the head (unit coordinates; the pose jitter comes at the end)
    male = a["Male"]
    age = float(latents["age"])
    build = float(latents["build"])
    cx, cy = 0.5, 0.42
    fw = 0.185 * (1.04 if male else 1.0) * (1.0 + 0.025 * np.clip(build, -2, 2)) * head.uniform(0.96, 1.04)
    fh = 0.255 * head.uniform(0.97, 1.03)
    if a["Oval_Face"]:
        fw, fh = fw * 0.93, fh * 1.04
    if a["Chubby"]:
        fw *= 1.13
    tone = head.uniform() ** 1.6  # most faces light, some dark
    skin = jitter(_SKIN_PALE, 6, head) if a["Pale_Skin"] else jitter(mix(_SKIN_LIGHT, _SKIN_DARK, tone), 9, head)
    stubble_alpha = int(head.uniform(45, 75))
    shade = mix(skin, (60, 30, 20), 0.22)
    eye_y, brow_y = cy - 0.11 * fh, cy - 0.28 * fh
    eye_dx = 0.42 * fw
    nose_y, mouth_y = cy + 0.26 * fh, cy + 0.52 * fh

    if a["Bald"]:
        hair_color = None
    elif a["Black_Hair"] or a["Blond_Hair"] or a["Brown_Hair"] or a["Gray_Hair"]:
        name = next(n for n in _HAIR if a[n])
        hair_color = jitter(_HAIR[name], 12, hair)
    else:
        hair_color = jitter(_UNLABELLED_HAIR[int(hair.integers(len(_UNLABELLED_HAIR)))], 12, hair)
    facial_hair_color = hair_color or jitter((70, 60, 55) if age < 0.8 else (150, 148, 145), 12, hair)
    wavy, straight = a["Wavy_Hair"], a["Straight_Hair"]
    long_hair = hair_color is not None and hair.uniform() < (0.12 if male else 0.85)

    def hair_edge(x0, y0, x1, y1, amplitude):
        """Points of a vertical hair edge from (x0, y0) to (x1, y1): wavy hair undulates, straight does not."""
        waves = amplitude * (1.0 if wavy else 0.0 if straight else 0.35)
        phase = hair.uniform(0, 2 * math.pi)
        return [(px(x0 + (x1 - x0) * t + waves * math.sin(phase + 5 * math.pi * t)), px(y0 + (y1 - y0) * t))
                for t in (k / 8 for k in range(9))]

    # ---- body, neck, clothing
    draw.ellipse([px(cx - 0.42), px(cy + fh + 0.06), px(cx + 0.42), px(cy + fh + 0.7)], fill=cloth)
    if long_hair:  # hair behind the head, down to the shoulders
        left = hair_edge(cx - fw * 1.25, cy - 0.2 * fh, cx - fw * 1.35, cy + fh * 1.45, 0.03)
        right = hair_edge(cx + fw * 1.35, cy + fh * 1.45, cx + fw * 1.25, cy - 0.2 * fh, 0.03)
        draw.polygon(left + right, fill=hair_color)
        draw.ellipse([px(cx - fw * 1.25), px(cy - fh * 1.12), px(cx + fw * 1.25), px(cy + fh * 0.4)], fill=hair_color)
    draw.rectangle([px(cx - 0.45 * fw), px(cy + 0.6 * fh), px(cx + 0.45 * fw), px(cy + fh + 0.12)], fill=shade)
    if a["Wearing_Necktie"]:
        collar = jitter((235, 235, 235), 8, neck)
        draw.polygon([(px(cx - 0.5 * fw), px(cy + fh + 0.06)), (px(cx), px(cy + fh + 0.16)),
                      (px(cx + 0.5 * fw), px(cy + fh + 0.06)), (px(cx + 0.6 * fw), px(cy + fh + 0.13)),
                      (px(cx - 0.6 * fw), px(cy + fh + 0.13))], fill=collar)
        tie = random_color(neck)
        draw.polygon([(px(cx - 0.06), px(cy + fh + 0.11)), (px(cx + 0.06), px(cy + fh + 0.11)),
                      (px(cx + 0.08), px(cy + fh + 0.3)), (px(cx), px(cy + fh + 0.38)),
                      (px(cx - 0.08), px(cy + fh + 0.3))], fill=tie)
        draw.polygon([(px(cx - 0.045), px(cy + fh + 0.06)), (px(cx + 0.045), px(cy + fh + 0.06)),
                      (px(cx + 0.03), px(cy + fh + 0.12)), (px(cx - 0.03), px(cy + fh + 0.12))], fill=tie)
    if a["Wearing_Necklace"]:
        metal = jitter((212, 175, 55) if neck.uniform() < 0.6 else (200, 200, 205), 10, neck)
        box = [px(cx - 0.55 * fw), px(cy + fh - 0.04), px(cx + 0.55 * fw), px(cy + fh + 0.09)]
        draw.arc(box, 20, 160, fill=metal, width=max(2, round(ln(0.012))))

    # ---- ears (with earrings), face, chin
    for side in (-1, 1):
        ex = cx + side * fw * 0.98
        draw.ellipse([px(ex - 0.03), px(eye_y - 0.04), px(ex + 0.03), px(nose_y + 0.01)], fill=shade)
        if a["Wearing_Earrings"]:
            metal = jitter((220, 185, 60) if ears.uniform() < 0.6 else (215, 215, 220), 10, ears)
            r = 0.012 * ears.uniform(1.0, 1.6)
            ey = nose_y + 0.015 + r
            if ears.uniform() < 0.5:
                draw.ellipse([px(ex - r), px(ey - r), px(ex + r), px(ey + r)], outline=metal,
                             width=max(1, round(ln(0.008))))
            else:
                draw.ellipse([px(ex - r * 0.7), px(ey - r), px(ex + r * 0.7), px(ey + r * 0.4)], fill=metal)
    face_box = [px(cx - fw), px(cy - fh), px(cx + fw), px(cy + fh)]
    draw.ellipse(face_box, fill=skin)
    if male:  # a squarer jaw
        draw.rounded_rectangle([px(cx - 0.8 * fw), px(cy + 0.2 * fh), px(cx + 0.8 * fw), px(cy + 0.9 * fh)],
                               radius=ln(0.45 * fw), fill=skin)
    if a["Double_Chin"]:
        draw.arc([px(cx - 0.5 * fw), px(cy + 0.78 * fh), px(cx + 0.5 * fw), px(cy + 1.12 * fh)], 20, 160,
                 fill=shade + (200,), width=max(2, round(ln(0.01))))
        draw.chord([px(cx - 0.45 * fw), px(cy + 0.82 * fh), px(cx + 0.45 * fw), px(cy + 1.16 * fh)], 0, 180, fill=skin)
    if a["High_Cheekbones"]:
        for side in (-1, 1):
            hx = cx + side * 0.55 * fw
            draw.ellipse([px(hx - 0.22 * fw), px(cy + 0.02 * fh), px(hx + 0.22 * fw), px(cy + 0.16 * fh)],
                         fill=(255, 255, 255, 45))
            draw.arc([px(hx - 0.3 * fw), px(cy + 0.02 * fh), px(hx + 0.3 * fw), px(cy + 0.42 * fh)], 30, 150,
                     fill=shade + (110,), width=max(1, round(ln(0.007))))
    if a["Rosy_Cheeks"]:
        for side in (-1, 1):
            hx = cx + side * 0.55 * fw
            draw.ellipse([px(hx - 0.2 * fw), px(cy + 0.12 * fh), px(hx + 0.2 * fw), px(cy + 0.36 * fh)],
                         fill=(230, 80, 90, 70))
    wrinkles = float(np.clip((age - 0.4) / 1.6, 0.0, 1.0))
    if wrinkles > 0:  # faint forehead and smile lines, the only direct trace of age
        line = shade + (int(150 * wrinkles),)
        for k in range(3):
            y = cy - (0.52 + 0.08 * k) * fh
            draw.line([(px(cx - 0.4 * fw), px(y)), (px(cx + 0.4 * fw), px(y))], fill=line, width=1)
        for side in (-1, 1):
            draw.line([(px(cx + side * 0.25 * fw), px(nose_y - 0.02)), (px(cx + side * 0.42 * fw), px(mouth_y + 0.02))],
                      fill=line, width=max(1, round(ln(0.006))))

    # ---- facial hair (over the skin, under the mouth)
    lower_face = [px(cx - fw), px(cy - fh * 0.2), px(cx + fw), px(cy + fh * 1.02)]
    if a["5_o_Clock_Shadow"]:
        draw.chord(lower_face, 5, 175, fill=(40, 35, 35, stubble_alpha))
    beard = not a["No_Beard"]
    if beard and not a["Goatee"] and not a["Mustache"]:  # a full beard along the jaw
        draw.chord(lower_face, 0, 180, fill=facial_hair_color)
        draw.ellipse([px(cx - 0.45 * fw), px(nose_y + 0.02), px(cx + 0.45 * fw), px(mouth_y + 0.07)], fill=skin)
    if a["Goatee"]:
        draw.ellipse([px(cx - 0.3 * fw), px(mouth_y + 0.02), px(cx + 0.3 * fw), px(cy + fh * 1.0)],
                     fill=facial_hair_color)
    if a["Sideburns"]:
        for side in (-1, 1):
            x0 = cx + side * 0.96 * fw
            draw.polygon([(px(x0), px(eye_y - 0.03)), (px(x0 - side * 0.05), px(eye_y - 0.03)),
                          (px(x0 - side * 0.06), px(nose_y + 0.03)), (px(x0 - side * 0.01), px(nose_y + 0.03))],
                         fill=facial_hair_color)

    # ---- hair on the head, hat
    if hair_color is not None:
        hairline = 0.52 + (0.2 if a["Receding_Hairline"] else 0.0)
        alpha = math.degrees(math.asin(min(hairline, 0.98)))
        cap = [px(cx - fw * 1.06), px(cy - fh * 1.1), px(cx + fw * 1.06), px(cy + fh * 1.02)]
        draw.chord(cap, 180 + alpha, 360 - alpha, fill=hair_color)
        if not long_hair:  # short hair: a little over the temples
            for side in (-1, 1):
                x0 = cx + side * fw
                draw.polygon([(px(x0), px(cy - 0.55 * fh)), (px(x0 + side * 0.015), px(cy - 0.55 * fh)),
                              (px(x0 + side * 0.01), px(brow_y)), (px(x0 - side * 0.012), px(brow_y))], fill=hair_color)
        if a["Receding_Hairline"]:  # bare temples: an M-shaped hairline
            for side in (-1, 1):
                tx = cx + side * 0.5 * fw
                draw.ellipse([px(tx - 0.22 * fw), px(cy - 0.98 * fh), px(tx + 0.22 * fw), px(cy - 0.55 * fh)],
                             fill=skin)
        if wavy:  # curls along the crown
            for t in range(200, 341, 20):
                r = 0.035
                x = cx + fw * 1.02 * math.cos(math.radians(t))
                y = cy - 0.04 + fh * 1.02 * math.sin(math.radians(t))
                draw.ellipse([px(x - r), px(y - r), px(x + r), px(y + r)], fill=hair_color)
        if straight:  # sleek: faint parallel strands combed back over the crown
            sheen = mix(hair_color, (255, 255, 255), 0.3) + (110,)
            for k in (-2, -1, 0, 1, 2):
                x = cx + k * 0.18 * fw
                draw.line([(px(x), px(cy - 1.02 * fh)), (px(x + 0.04 * k * fw), px(cy - 0.62 * fh))], fill=sheen,
                          width=max(1, round(ln(0.006))))
        if a["Bangs"]:
            teeth = 7
            edge = [(px(cx - 0.9 * fw), px(cy - 0.75 * fh))]
            for k in range(teeth + 1):
                x = cx - 0.85 * fw + 1.7 * fw * k / teeth
                y = brow_y - (0.035 if k % 2 == 0 else 0.012) - (0.0 if straight else hair.uniform(0, 0.015))
                edge.append((px(x), px(y)))
            edge.append((px(cx + 0.9 * fw), px(cy - 0.75 * fh)))
            draw.polygon(edge, fill=hair_color)
        if long_hair:  # locks framing the face
            for side in (-1, 1):
                pts = hair_edge(cx + side * 0.95 * fw, cy - 0.6 * fh, cx + side * 1.05 * fw, cy + 0.9 * fh, 0.012)
                pts += hair_edge(cx + side * 1.3 * fw, cy + 1.2 * fh, cx + side * 1.2 * fw, cy - 0.6 * fh, 0.02)
                draw.polygon(pts, fill=hair_color)
    else:  # bald: a shine on the scalp, sometimes a fringe above the ears
        draw.ellipse([px(cx - 0.4 * fw), px(cy - 0.95 * fh), px(cx + 0.1 * fw), px(cy - 0.7 * fh)],
                     fill=(255, 255, 255, 60))
        if hair.uniform() < 0.6:
            for side in (-1, 1):
                x0 = cx + side * 0.98 * fw
                draw.ellipse([px(x0 - 0.03), px(brow_y - 0.04), px(x0 + 0.03), px(eye_y + 0.03)],
                             fill=facial_hair_color)
    if a["Wearing_Hat"]:
        hat_color = random_color(hat, 10, 246)
        kind = hat.uniform()
        top = cy - fh * 1.35
        brim_y = cy - fh * hat.uniform(0.55, 0.7)
        draw.chord([px(cx - fw * 1.12), px(top), px(cx + fw * 1.12), px(brim_y + (brim_y - top))], 180, 360,
                   fill=hat_color)
        if kind < 0.45:  # brimmed hat
            draw.ellipse([px(cx - fw * 1.6), px(brim_y - 0.03), px(cx + fw * 1.6), px(brim_y + 0.03)], fill=hat_color)
        elif kind < 0.8:  # cap with a visor
            draw.ellipse([px(cx - fw * 1.0), px(brim_y - 0.02), px(cx + fw * 1.1), px(brim_y + 0.045)],
                         fill=jitter(hat_color, 20, hat))
        else:  # beanie: a folded band
            draw.rectangle([px(cx - fw * 1.1), px(brim_y - 0.05), px(cx + fw * 1.1), px(brim_y)],
                           fill=jitter(hat_color, 25, hat))

    # ---- eyes, brows, make-up
    narrow = 0.5 if a["Narrow_Eyes"] else 1.0
    ew, eh = 0.2 * fw, 0.1 * fw * narrow * (0.85 if a["Smiling"] else 1.0)
    iris = jitter(((60, 40, 25), (40, 80, 120), (70, 100, 60), (30, 25, 20))[int(head.integers(4))], 8, head)
    shadow = jitter(((120, 70, 130), (90, 60, 50), (60, 90, 140), (150, 100, 80))[int(makeup.integers(4))], 10, makeup)
    brow_color = mix(facial_hair_color, (20, 15, 15), 0.5 if a["Bushy_Eyebrows"] else 0.25)
    for side in (-1, 1):
        ex = cx + side * eye_dx
        if a["Heavy_Makeup"]:
            draw.ellipse([px(ex - ew * 1.2), px(eye_y - eh - 0.035), px(ex + ew * 1.2), px(eye_y + eh * 0.3)],
                         fill=shadow + (140,))
        if a["Bags_Under_Eyes"]:
            draw.arc([px(ex - ew), px(eye_y - eh), px(ex + ew), px(eye_y + eh + 0.03)], 20, 160,
                     fill=shade + (170,), width=max(2, round(ln(0.008))))
        draw.ellipse([px(ex - ew), px(eye_y - eh), px(ex + ew), px(eye_y + eh)], fill=(245, 245, 240),
                     outline=(20, 15, 15) if a["Heavy_Makeup"] else None, width=max(1, round(ln(0.006))))
        r = min(eh, ew) * 0.95
        draw.ellipse([px(ex - r), px(eye_y - r), px(ex + r), px(eye_y + r)], fill=iris)
        lift = 0.035 if a["Arched_Eyebrows"] else 0.01
        thick = round(ln(0.017 if a["Bushy_Eyebrows"] else 0.009))
        inner, outer = ex - side * ew * 1.1, ex + side * ew * 1.2
        draw.line([(px(inner), px(brow_y + 0.005)), (px(ex + side * ew * 0.2), px(brow_y - lift)),
                   (px(outer), px(brow_y + 0.012))], fill=brow_color, width=max(1, thick), joint="curve")

    # ---- nose
    nose_w = 0.17 * fw * (1.45 if a["Big_Nose"] else 1.0) * (0.7 if a["Pointy_Nose"] else 1.0)
    tip_y = nose_y + (0.025 if a["Big_Nose"] else 0.0) + (0.02 if a["Pointy_Nose"] else 0.0)
    draw.polygon([(px(cx), px(eye_y + 0.02)), (px(cx + nose_w), px(tip_y)), (px(cx - nose_w), px(tip_y))],
                 fill=shade + (150,))
    for side in (-1, 1):
        nx = cx + side * nose_w * 0.5
        draw.ellipse([px(nx - 0.01), px(tip_y - 0.012), px(nx + 0.01), px(tip_y + 0.004)], fill=(60, 30, 25, 140))

    # ---- mustache, mouth
    mw = 0.36 * fw * (1.12 if a["Smiling"] else 1.0) * head.uniform(0.93, 1.07)
    lip = 0.018 * (1.7 if a["Big_Lips"] else 1.0)
    if a["Wearing_Lipstick"]:
        lip_color = jitter(_LIPSTICK[int(makeup.integers(len(_LIPSTICK)))], 10, makeup)
    else:
        lip_color = mix(skin, (150, 70, 70), 0.45)
    curve = 0.03 if a["Smiling"] else 0.0
    opening = 0.02 if a["Mouth_Slightly_Open"] else 0.0
    left, right = cx - mw, cx + mw
    corner_y = mouth_y - curve
    upper = [(px(left), px(corner_y)), (px(cx - mw * 0.4), px(mouth_y - lip)), (px(cx), px(mouth_y - lip * 0.6)),
             (px(cx + mw * 0.4), px(mouth_y - lip)), (px(right), px(corner_y)), (px(cx), px(mouth_y + curve * 0.3))]
    lower = [(px(left), px(corner_y)), (px(cx), px(mouth_y + curve + opening)), (px(right), px(corner_y)),
             (px(cx), px(mouth_y + curve + opening + lip * 1.1))]
    if opening or a["Smiling"]:
        gap = [(px(left + 0.01), px(corner_y)), (px(cx), px(mouth_y + curve * 0.3)), (px(right - 0.01), px(corner_y)),
               (px(cx), px(mouth_y + curve + opening))]
        draw.polygon(gap, fill=(60, 20, 25))
        if a["Smiling"]:
            draw.polygon(gap[:3] + [(px(cx), px(mouth_y + curve * 0.3 + opening * 0.5 + 0.008))], fill=(235, 232, 225))
    draw.polygon(upper, fill=lip_color)
    draw.polygon([lower[0], lower[1], lower[2], lower[3]], fill=lip_color)
    if a["Mustache"]:
        draw.polygon([(px(cx - mw * 1.15), px(mouth_y - lip + 0.004)), (px(cx), px(nose_y + 0.035)),
                      (px(cx + mw * 1.15), px(mouth_y - lip + 0.004)), (px(cx), px(mouth_y - lip * 0.6 - 0.003))],
                     fill=facial_hair_color)

    # ---- eyeglasses (last: they sit in front of everything)
    if a["Eyeglasses"]:
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

    # ---- downsample (box filter: the antialiasing), then pose jitter: rotation, scale and shift around the
    # centre (PIL wants the inverse map, output -> input)
    img = img.reduce(_SUPERSAMPLE)
    angle = math.radians(u(-12.0, 12.0))
    scale = u(0.88, 1.12)
    shift_x, shift_y = u(-0.06, 0.06, size=2) * image_size
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    c = image_size / 2.0
    coeffs = (cos, sin, c - cos * (c + shift_x) - sin * (c + shift_y),
              -sin, cos, c + sin * (c + shift_x) - cos * (c + shift_y))
    img = img.transform(img.size, Image.Transform.AFFINE, coeffs, resample=Image.Resampling.BILINEAR, fillcolor=bg)

    # ---- photo: blur (every photo a little, Blurry ones clearly), lighting, sensor noise
    radius = (u(1.0, 1.8) if a["Blurry"] else u(0.0, 0.55)) * image_size / 64.0
    if radius > 0.05:
        img = img.filter(ImageFilter.GaussianBlur(radius))
    pixels = np.asarray(img, dtype=np.float32)
    gain = (u(0.75, 1.2) * (1.0 + scene.normal(0.0, 0.05, size=3))).astype(np.float32)  # exposure, white balance
    offset, sigma = u(-20, 20), u(2.0, 9.0)
    noise = scene.standard_normal(pixels.shape, dtype=np.float32)
    pixels = pixels * gain + (offset + sigma * noise)
    return Image.fromarray(np.clip(pixels, 0, 255, out=pixels).astype(np.uint8))


__all__ = ["render_face"]
