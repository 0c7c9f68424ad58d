#!/usr/bin/python3
"""The head view (headwise/io/head_view.hpp) in a real browser: Debian's headless Chromium driven by
Selenium, the page opened from disk as a learner would open it.

    head_view_test.py model   --runner build/src/headwise  --out build/browser
    head_view_test.py lesson3 --lesson build/lessons/03_multi_head --out build/browser

`model` writes the page with `headwise heads --html` for a 16-token sentence (the trained model,
lesson 07); `lesson3` with lesson 03's `--html` (random weights, no model needed). Each command also
writes the same weights as .npy, and the test checks that what the page shows equals that file:

  - no console error, from loading to the last click
  - hovering a named query token: only its lines are drawn, and the side table's weights for a
    named head equal the .npy (<= 1e-4)
  - switching the layer (model): the table follows, again equal to the .npy
  - toggling a head off removes its lines and its column, and on again brings them back
  - clicking a model-view cell opens that layer and head alone in the head view
  - the ablation view colours the grid
  - a screenshot (PNG under --out) of the expected size that is not blank
  - the file is under 1 MB, and the page is ready in under 1 s (its own performance.now())

    head_view_test.py screenshot PAGE PNG [--token it] [--layer 3]

takes the picture of a page that the docs show (docs/figures/07_heads.png from lesson 07's
docs/figures/07_heads.html), with the same browser set-up.

Exit 77 (ctest: skipped) when chromium, chromedriver or python3-selenium is missing
(scripts/install-deps --ci installs them), or, for `model`, when the model is not cached
(scripts/fetch-model). Only the standard library besides Selenium: the .npy and the PNG are read by
hand, so numpy and Pillow are not needed.
"""
import argparse
import ast
import os
import shutil
import struct
import subprocess
import sys
import zlib

SKIP = 77
WIDTH, HEIGHT = 1280, 1000  # the screenshot's size in pixels (device scale factor 1)
SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."  # 16 tokens
LESSON3_WORDS = "the black cat sat on the mat while the dog slept by the warm fire tonight"  # 16 words


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def check(ok, why):
    if not ok:
        fail(why)


def read_npy(path):
    """A float32 C-order .npy as (shape, flat list of floats)."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:6] == b"\x93NUMPY", f"{path} is not a .npy file")
    major = data[6]
    header_len = struct.unpack("<H", data[8:10])[0] if major == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    check(header["descr"] == "<f4" and not header["fortran_order"], f"{path}: expected float32 C order")
    shape = tuple(header["shape"])
    count = 1
    for s in shape:
        count *= s
    body = data[start + header_len:]
    return shape, list(struct.unpack(f"<{count}f", body[:4 * count]))


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, filters undone."""
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            check(depth == 8 and color in (2, 6), f"{path}: expected 8-bit RGB or RGBA, got depth {depth} type {color}")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def make_page(args):
    """Writes the page and its .npy; returns (html, npy, facts about what to test)."""
    os.makedirs(args.out, exist_ok=True)
    html = os.path.abspath(os.path.join(args.out, f"head_view_{args.source}.html"))
    npy = os.path.join(args.out, f"head_view_{args.source}.npy")
    for p in (html, npy):
        if os.path.exists(p):
            os.remove(p)
    if args.source == "model":
        code, out, err = run([args.runner, "heads", "--sentence", SENTENCE, "--tokens"])
        if code == 2 and "fetch-model" in err:
            skip("the model is not cached (scripts/fetch-model); the lesson3 test covers the page")
        check(code == 0, f"headwise heads --tokens exited {code}: {err}")
        code, out, err = run([args.runner, "heads", "--sentence", SENTENCE, "--html", html, "--attention", npy])
        check(code == 0, f"headwise heads --html exited {code}: {err}")
        # "fox" as query; layer 0 head 2 is the previous-token head (lesson 07), then layer 3.
        facts = {"token": "fox", "head": 2, "layer": 0, "other_layer": 3, "toggle": 5, "cell": (2, 7)}
    else:
        code, out, err = run([args.lesson, "--quiet", "--seq", "16", "--heads", "4", "--sentence", LESSON3_WORDS,
                              "--html", html, "--weights", npy])
        check(code == 0, f"lesson 03 --html exited {code}: {err}")
        facts = {"token": "cat", "head": 1, "layer": 0, "other_layer": None, "toggle": 3, "cell": (0, 2)}
    check(os.path.exists(html) and os.path.exists(npy), "the command did not write both files")
    shape, flat = read_npy(npy)
    if len(shape) == 3:  # lesson 03: (H, N, N), one layer
        shape = (1,) + shape
    return html, shape, flat, facts


def start_browser():
    """Headless Chromium at WIDTH x HEIGHT that records every error the page raises or logs, or
    exit 77 when the browser, its driver or Selenium is missing."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        skip("chromium or chromedriver is not installed (scripts/install-deps --ci: chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("python3-selenium is not installed (scripts/install-deps --ci)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={WIDTH},{HEIGHT}", "--no-first-run", "--disable-extensions"):
        options.add_argument(a)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    # Every error the page raises or logs is kept, from before its first script runs.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__errors = [];
        window.addEventListener("error", (e) => window.__errors.push(String(e.message)));
        const original = console.error;
        console.error = (...a) => { window.__errors.push(a.join(" ")); original(...a); };"""})
    return driver


def open_page(driver, html):
    """Opens the file from disk; returns the ms the page took to be ready, by its own clock."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get("file://" + os.path.abspath(html))
    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script("return document.documentElement.dataset.renderMs !== undefined"))
    return float(driver.execute_script("return document.documentElement.dataset.renderMs"))


def screenshot(args):
    """The docs' picture of a page: the given layer, every head, the named token hovered."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    driver = start_browser()
    try:
        open_page(driver, args.page)
        tokens = driver.execute_script("return data.tokens")
        check(args.token in tokens, f"the page has no token {args.token!r}")
        Select(driver.find_element(By.ID, "layer")).select_by_value(str(args.layer))
        q = tokens.index(args.token)
        ActionChains(driver).move_to_element(driver.find_element(By.ID, f"queries-{q}")).perform()
        check(driver.save_screenshot(args.png), f"could not write {args.png}")
        errors = driver.execute_script("return window.__errors")
        check(not errors, f"console errors: {errors}")
    finally:
        driver.quit()
    print(f"wrote {args.png}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source", choices=["model", "lesson3", "screenshot"])
    parser.add_argument("page", nargs="?", help="screenshot: the page")
    parser.add_argument("png", nargs="?", help="screenshot: the PNG to write")
    parser.add_argument("--token", default="it", help="screenshot: the query token hovered")
    parser.add_argument("--layer", type=int, default=0, help="screenshot: the layer shown")
    parser.add_argument("--runner", default="build/src/headwise")
    parser.add_argument("--lesson", default="build/lessons/03_multi_head")
    parser.add_argument("--out", default="build/browser")
    args = parser.parse_args()
    if args.source == "screenshot":
        check(args.page and args.png, "screenshot needs PAGE and PNG")
        return screenshot(args)

    driver = start_browser()
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    try:
        html, shape, flat, facts = make_page(args)
        L, H, N, _ = shape
        size = os.path.getsize(html)
        check(size < 1_000_000, f"the page is {size} bytes; a 16-token sentence must stay under 1 MB")

        def npy_weight(layer, head, q, k):
            return flat[((layer * H + head) * N + q) * N + k]

        render_ms = open_page(driver, html)

        def no_errors(when):
            errors = list(driver.execute_script("return window.__errors"))
            errors += [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            check(not errors, f"console errors {when}: {errors}")

        no_errors("while loading")
        check(render_ms < 1000, f"the page took {render_ms:.0f} ms to be ready (limit 1000 ms)")
        tokens = driver.execute_script("return data.tokens")
        check(len(tokens) == N, f"the page has {len(tokens)} tokens, the .npy {N}")
        q = tokens.index(facts["token"])

        def lines():
            return driver.execute_script(
                "return [...document.querySelectorAll('#lines line[data-head]')]"
                ".map((l) => [Number(l.dataset.head), Number(l.dataset.query), Number(l.dataset.key)])")

        def hover_and_compare(layer, head):
            ActionChains(driver).move_to_element(driver.find_element(By.ID, f"queries-{q}")).perform()
            drawn = lines()
            check(drawn and all(line[1] == q for line in drawn),
                  f"hovering query {q} should leave only its lines, drew {len(drawn)} with other queries")
            for k in range(N):
                cell = driver.find_element(By.CSS_SELECTOR, f'#weights td[data-head="{head}"][data-key="{k}"]')
                shown, expected = float(cell.text), npy_weight(layer, head, q, k)
                check(abs(shown - expected) <= 1e-4,
                      f"layer {layer} head {head} query {q} key {k}: the page shows {shown}, the .npy has {expected}")
            ActionChains(driver).move_to_element(driver.find_element(By.ID, "title")).perform()  # every line again

        hover_and_compare(facts["layer"], facts["head"])
        if facts["other_layer"] is not None:
            Select(driver.find_element(By.ID, "layer")).select_by_value(str(facts["other_layer"]))
            hover_and_compare(facts["other_layer"], facts["head"])

        t = facts["toggle"]
        driver.find_element(By.ID, f"head-{t}").click()
        check(t not in {line[0] for line in lines()}, f"head {t} switched off still has lines")
        check("off" in driver.find_element(By.ID, f"head-{t}").get_attribute("class"), "the chip does not show off")
        driver.find_element(By.ID, f"head-{t}").click()
        check(t in {line[0] for line in lines()}, f"head {t} switched on again has no lines")

        cl, ch = facts["cell"]
        cell = driver.find_element(By.ID, f"cell-{cl}-{ch}")
        driver.execute_script("arguments[0].scrollIntoView()", cell)
        cell.click()
        check(driver.find_element(By.ID, "layer").get_attribute("value") == str(cl), "the cell did not open its layer")
        check({line[0] for line in lines()} == {ch}, f"the cell did not open head {ch} alone")
        role = driver.find_element(By.CSS_SELECTOR, f"#cell-{cl}-{ch} .role").text
        check(role != "", "the model-view cell has no role label")

        driver.find_element(By.ID, "mode-ablation").click()
        check("ablation" in driver.find_element(By.ID, "grid").get_attribute("class"), "no ablation view")
        check(driver.execute_script(f"return document.getElementById('cell-0-0').style.background") != "",
              "the ablation view did not colour the cells")
        driver.find_element(By.ID, "mode-model").click()
        no_errors("after the clicks")

        # The screenshot: the top of the page, every head on, the named token hovered.
        driver.find_element(By.ID, "all-heads").click()
        Select(driver.find_element(By.ID, "layer")).select_by_value(str(facts["layer"]))
        driver.execute_script("window.scrollTo(0, 0)")
        ActionChains(driver).move_to_element(driver.find_element(By.ID, f"queries-{q}")).perform()
        shot = os.path.join(args.out, f"head_view_{args.source}.png")
        check(driver.save_screenshot(shot), "the screenshot could not be written")
        no_errors("at the end")
    finally:
        driver.quit()

    width, height, bpp, rows = png_pixels(shot)
    check((width, height) == (WIDTH, HEIGHT), f"the screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    colours, background = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, 4 * bpp):
            pixel = bytes(row[x:x + 3])
            colours.add(pixel)
            background += pixel == b"\xff\xff\xff"
    sampled = len(rows[::4]) * len(range(0, width * bpp, 4 * bpp))
    check(len(colours) >= 50, f"the screenshot has {len(colours)} colours: blank?")
    check(background < 0.97 * sampled, "the screenshot is almost all white: blank?")
    print(f"ok: {args.source}: {N} tokens, {L} layers x {H} heads, page {size} bytes, ready in {render_ms:.0f} ms, "
          f"screenshot {shot} ({width}x{height}, {len(colours)} colours sampled)")


if __name__ == "__main__":
    main()
