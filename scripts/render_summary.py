#!/usr/bin/env python3
"""Render perfgate's markdown summaries as GitHub shows them, and screenshot them (a
maintainer's tool, not a CI test: CI has no browser).

Two real failing checks are rendered:

- `changes`: tests/data/field/changes/h100-e/hf-decoder-eager-run1.csv.gz against a baseline
  recorded from tests/data/field/h100/h100-a/hf-decoder-run{1,2,3}.csv.gz (issue 22's change
  findings);
- `zoo`: the zoo's bad build (tests/data/h100/zoo-bad-short-run1.csv) against
  baselines/h100/zoo.yaml (issue 25's stall charts: mermaid in the step summary, SVG files
  beside the --markdown report).

Each report is turned into HTML with markdown-it (html on, as GitHub keeps <details>), wrapped
in GitHub's stylesheet (github-markdown-css, light and dark) in an article 900 px wide, the
mermaid blocks drawn by mermaid (GitHub's dark theme uses mermaid's `dark`), every <details>
opened, and screenshotted with headless Chromium (puppeteer-core).

Needs: chromium (`apt-get install -y chromium`) and, in TOOLS (default /work/render-tools),
`npm install github-markdown-css mermaid markdown-it puppeteer-core`.

    python scripts/render_summary.py [--tools DIR] [--out DIR] [--docs]

Writes OUT/NAME-{light,dark}.png (the whole page) and OUT/NAME-{light,dark}-top.png,
OUT/NAME-{light,dark}-details.png, OUT/NAME-{light,dark}-chart.png (the status and
tables; the first folded block, opened; the first stall chart).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIELD = ROOT / "tests" / "data" / "field"
# The screenshots docs/check.md shows: OUT's name -> docs/img's.
DOCS = {
    "changes-light-top.png": "summary-changes-light.png",
    "changes-dark-details.png": "summary-change-details-dark.png",
    "zoo-light-chart.png": "stall-chart-mermaid-light.png",
    "zoo-dark-chart.png": "stall-chart-mermaid-dark.png",
    "zoo-svg-dark-chart.png": "stall-chart-svg-dark.png",
}

_NODE = r"""
const fs = require("fs");
const path = require("path");
const MarkdownIt = require("markdown-it");
const puppeteer = require("puppeteer-core");
const [jobsFile, tools] = process.argv.slice(2);
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf8"));
const md = new MarkdownIt({ html: true, linkify: true });
const fence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, i, opts, env, self) =>
  tokens[i].info.trim() === "mermaid"
    ? `<pre class="mermaid">${md.utils.escapeHtml(tokens[i].content)}</pre>`
    : fence(tokens, i, opts, env, self);
const css = (theme) => path.join(tools, "node_modules/github-markdown-css",
  `github-markdown-${theme}.css`);
const mermaidJs = path.join(tools, "node_modules/mermaid/dist/mermaid.min.js");

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--allow-file-access-from-files"],
  });
  for (const job of jobs) {
    for (const theme of ["light", "dark"]) {
      const body = md.render(fs.readFileSync(job.markdown, "utf8"));
      const bg = theme === "dark" ? "#0d1117" : "#ffffff";
      const html = `<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="file://${css(theme)}">
<style>body{background:${bg};margin:0} .markdown-body{box-sizing:border-box;
width:900px;padding:24px} pre.mermaid{background:transparent}</style>
<script src="file://${mermaidJs}"></script></head>
<body><article class="markdown-body">${body}</article>
<script>
for (const d of document.querySelectorAll("details")) d.open = true;
mermaid.initialize({startOnLoad: false, theme: "${theme === "dark" ? "dark" : "default"}"});
mermaid.run().then(() => { document.body.dataset.done = "1"; },
                   (e) => { document.body.dataset.done = "error: " + e; });
</script></body></html>`;
      const page = path.join(path.dirname(job.markdown), `${job.name}-${theme}.html`);
      fs.writeFileSync(page, html);
      const tab = await browser.newPage();
      await tab.setViewport({ width: 900, height: 800 });
      await tab.goto("file://" + page);
      await tab.waitForFunction("document.body.dataset.done", { timeout: 60000 });
      const done = await tab.evaluate(() => document.body.dataset.done);
      if (done !== "1") throw new Error(`${job.name}: mermaid: ${done}`);
      const whole = path.join(job.out, `${job.name}-${theme}.png`);
      await tab.screenshot({ path: whole, fullPage: true });
      // The status line and the tables, up to the first kernel's details.
      const top = await tab.evaluate(() => {
        const d = document.querySelector("details");
        return d ? d.getBoundingClientRect().top + window.scrollY : 800;
      });
      await tab.screenshot({ path: path.join(job.out, `${job.name}-${theme}-top.png`),
        clip: { x: 0, y: 0, width: 900, height: Math.min(Math.max(top, 200), 1400) } });
      // The first folded block, opened (a change finding's kernels, or a kernel's details).
      await tab.screenshot({ path: path.join(job.out, `${job.name}-${theme}-details.png`),
        clip: { x: 0, y: Math.max(top - 8, 0), width: 900, height: 520 } });
      // The first stall chart with its heading and table.
      const chart = await tab.evaluate(() => {
        const c = document.querySelector("pre.mermaid svg, img[src$='.svg']");
        if (!c) return null;
        let head = c.closest("p, pre");
        let start = head;
        for (let el = head; el; el = el.previousElementSibling) {
          start = el;
          if (el.textContent.startsWith("Stalls")) break;
        }
        const a = start.getBoundingClientRect(), b = c.getBoundingClientRect();
        return { y: a.top + window.scrollY - 8, h: b.bottom - a.top + 16 };
      });
      if (chart) {
        await tab.screenshot({ path: path.join(job.out, `${job.name}-${theme}-chart.png`),
          clip: { x: 0, y: chart.y, width: 900, height: chart.h } });
      }
      await tab.close();
    }
  }
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def _perfgate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "--no-color", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def _check(work: Path, name: str, baseline: Path, capture: Path, svg: bool) -> Path:
    """The markdown a failing check writes: with `svg`, the --markdown file (SVG charts
    beside it); otherwise the step summary (mermaid charts, as GitHub shows the job)."""
    markdown, summary = work / f"{name}.md", work / f"{name}-step.md"
    summary.unlink(missing_ok=True)
    proc = _perfgate(
        "check", "-b", str(baseline), "-c", str(capture), "--markdown", str(markdown),
        "--github", "--format", "text", env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    if proc.returncode != 1:
        raise SystemExit(f"{name}: expected a failing check (exit 1), got {proc.returncode}:\n"
                         f"{proc.stderr}")  # fmt: skip
    return markdown if svg else summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", default="/work/render-tools", help="npm packages' folder")
    parser.add_argument(
        "--out", default=str(Path(tempfile.gettempdir()) / "perfgate-render"), help="screenshots"
    )
    parser.add_argument(
        "--docs", action="store_true", help="also copy the screenshots docs/check.md shows"
    )
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        recorded = work / "hf-decoder.yaml"
        runs = [FIELD / "h100" / "h100-a" / f"hf-decoder-run{i}.csv.gz" for i in (1, 2, 3)]
        proc = _perfgate(
            "baseline", "record", *(a for r in runs for a in ("-c", str(r))), "-o", str(recorded)
        )
        if proc.returncode != 0:
            raise SystemExit(f"record: {proc.stderr}")
        eager = FIELD / "changes" / "h100-e" / "hf-decoder-eager-run1.csv.gz"
        zoo = ROOT / "baselines" / "h100" / "zoo.yaml"
        zoo_bad = ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv"
        jobs = [
            ("changes", _check(work, "changes", recorded, eager, svg=False)),
            ("zoo", _check(work, "zoo", zoo, zoo_bad, svg=False)),
            ("zoo-svg", _check(work, "zoo-svg", zoo, zoo_bad, svg=True)),
        ]
        spec = [{"name": n, "markdown": str(m), "out": str(out)} for n, m in jobs]
        (work / "jobs.json").write_text(json.dumps(spec))
        (work / "render.js").write_text(_NODE)
        env = {**os.environ, "NODE_PATH": str(Path(args.tools) / "node_modules")}
        subprocess.run(
            [
                shutil.which("node") or "node",
                str(work / "render.js"),
                str(work / "jobs.json"),
                args.tools,
            ],
            env=env,
            check=True,
        )
        if os.environ.get("KEEP_MARKDOWN"):
            for _, m in jobs:
                (out / m.name).write_text(m.read_text())
    if args.docs:
        for source, name in DOCS.items():
            shutil.copyfile(out / source, ROOT / "docs" / "img" / name)
    for png in sorted(out.glob("*.png")):
        print(png.relative_to(ROOT) if png.is_relative_to(ROOT) else png)


if __name__ == "__main__":
    main()
