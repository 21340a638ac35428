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

from pate.data.synthetic_face import (
    Canvas,
    Head,
    bald_scalp,
    body_and_neckwear,
    draw_hat,
    ears_and_face,
    eyeglasses,
    eyes_and_brows,
    facial_hair,
    jitter,
    mix,
    mouth,
    nose,
    random_color,
    scalp_hair,
)

_SUPERSAMPLE = 2

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


def render_face(
    attributes: Mapping[str, bool],
    latents: Mapping[str, float],
    image_size: int,
    rng: np.random.Generator,
    person_rng: np.random.Generator | None = None,
) -> Image.Image:
    """An RGB ``image_size`` x ``image_size`` face showing ``attributes`` (name -> present).

    ``latents`` gives the continuous ``age`` and ``build`` of ``synthetic_attributes`` (faint wrinkles, face
    width). ``rng`` supplies every other random choice: colours, shapes, pose, background, blur, noise. The parts
    are drawn back to front, each from its own stream; the order of the calls below is the order of the layers.
    ``person_rng``, where the face is one of a person's images, supplies the person's own streams instead -- the
    head (skin, face and feature shapes), the hair and the ears -- so that their images show one face, while the
    scene, the pose, the clothes and the accessories stay the image's.
    """
    a = attributes
    size = image_size * _SUPERSAMPLE
    scene, head, hair, neck, ears, hat, glasses, makeup = rng.spawn(8)
    if person_rng is not None:
        head, hair, ears = person_rng.spawn(3)
    img, bg, canvas = _background(size, scene)
    cloth = random_color(scene)
    h = _head(a, latents, head, hair)
    body_and_neckwear(canvas, a, h, cloth, hair, neck)
    ears_and_face(canvas, a, h, ears)
    facial_hair(canvas, a, h)
    if h.hair_color is not None:
        scalp_hair(canvas, a, h, hair)
    else:
        bald_scalp(canvas, h, hair)
    if a["Wearing_Hat"]:
        draw_hat(canvas, h, hat)
    ew, eh = eyes_and_brows(canvas, a, h, head, makeup)
    nose(canvas, a, h)
    mouth(canvas, a, h, head, makeup)
    if a["Eyeglasses"]:
        eyeglasses(canvas, h, ew, eh, glasses)
    return _photograph(img, a, bg, image_size, scene)


def _background(size: int, scene: np.random.Generator):
    """A random base colour and a few large low-contrast shapes; returns (image, base colour, canvas)."""
    u = scene.uniform
    bg = random_color(scene, 30, 226)
    img = Image.new("RGB", (size, size), bg)
    canvas = Canvas(ImageDraw.Draw(img, "RGBA"), size)
    px = canvas.px
    for _ in range(int(scene.integers(1, 4))):
        x0, y0 = u(-0.3, 0.8, size=2)
        w, h = u(0.2, 0.8, size=2)
        shape = canvas.draw.ellipse if u() < 0.5 else canvas.draw.rectangle
        shape([px(x0), px(y0), px(x0 + w), px(y0 + h)], fill=jitter(bg, 40, scene) + (int(u(60, 200)),))
    return img, bg, canvas


def _head(a, latents, head: np.random.Generator, hair: np.random.Generator) -> Head:
    """Face size and shape, skin, the landmarks' heights, hair colour and length."""
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
    if a["Bald"]:
        hair_color = None
    elif a["Black_Hair"] or a["Blond_Hair"] or a["Brown_Hair"] or a["Gray_Hair"]:
        name = next(n for n in _HAIR if a[n])
        hair_color = jitter(_HAIR[name], 12, hair)
    else:
        hair_color = jitter(_UNLABELLED_HAIR[int(hair.integers(len(_UNLABELLED_HAIR)))], 12, hair)
    facial_hair_color = hair_color or jitter((70, 60, 55) if age < 0.8 else (150, 148, 145), 12, hair)
    long_hair = hair_color is not None and hair.uniform() < (0.12 if male else 0.85)
    return Head(
        cx,
        cy,
        fw,
        fh,
        skin,
        mix(skin, (60, 30, 20), 0.22),
        stubble_alpha,
        cy - 0.11 * fh,
        cy - 0.28 * fh,
        0.42 * fw,
        cy + 0.26 * fh,
        cy + 0.52 * fh,
        age,
        hair_color,
        facial_hair_color,
        a["Wavy_Hair"],
        a["Straight_Hair"],
        long_hair,
    )


def _photograph(img: Image.Image, a, bg, image_size: int, scene: np.random.Generator) -> Image.Image:
    """Downsample (box filter: the antialiasing), pose jitter (rotation, scale and shift around the centre; PIL
    wants the inverse map, output -> input), then the photo: blur (every photo a little, Blurry ones clearly),
    lighting, sensor noise."""
    u = scene.uniform
    img = img.reduce(_SUPERSAMPLE)
    angle = math.radians(u(-12.0, 12.0))
    scale = u(0.88, 1.12)
    shift_x, shift_y = u(-0.06, 0.06, size=2) * image_size
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    c = image_size / 2.0
    coeffs = (
        cos,
        sin,
        c - cos * (c + shift_x) - sin * (c + shift_y),
        -sin,
        cos,
        c + sin * (c + shift_x) - cos * (c + shift_y),
    )
    img = img.transform(img.size, Image.Transform.AFFINE, coeffs, resample=Image.Resampling.BILINEAR, fillcolor=bg)
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
