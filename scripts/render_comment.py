#!/usr/bin/env python3
"""Render the merged pull-request comment of a GPU matrix as a reviewer sees it, after the
comment workflow's sanitizer, and screenshot it (a maintainer's tool, not a CI test: CI has
no browser).

What it runs, as .github/workflows/perfgate-gpu.yml and perfgate-comment.yml do:

1. two real checks, one per GPU job, each writing `--pr-comment` and `--junit` into the
   folder its artifact would have (`perfgate-gpu-h100/`, `perfgate-gpu-h200/`):
   - h100: the zoo's regressed build (tests/data/h100/zoo-bad-short-run1.csv) against
     baselines/h100/zoo.yaml (fails: 8 regressed kernels, stall charts);
   - h200: the PyTorch model on an H200: a baseline recorded from
     tests/data/h200/real/torch-flash-run{1,2,3}.csv, checked against the same build captured
     on another machine start (start2-torch-flash-run1.csv; passes);
   each in a workspace of its own, as the Action runs it there: `perfgate check -b
   baselines/GPU/ -c perfgate-report/capture.csv`, so the comment names the paths CI would;
2. scripts/merge_reports.py on the two folders (the report job);
3. the sanitizer: the github-script step of perfgate-comment.yml, taken from the workflow
   file and run under node with stand-ins for GitHub's API; the text it would post is what
   gets rendered, and the script stops when the sanitizer refused the comment or escaped a tag;
4. markdown-it (html on: GitHub renders the bare tags the sanitizer keeps), GitHub's
   stylesheet (github-markdown-css), mermaid for the stall charts, in a comment box 900 px
   wide; headless Chromium (puppeteer-core) checks that no tag shows as text and screenshots it
   as posted (every <details> folded, as GitHub shows it) and with every <details> opened.

Needs: chromium (`apt-get install -y chromium`), node, and in TOOLS (default
/work/render-tools) `npm install github-markdown-css mermaid markdown-it puppeteer-core`
(made with 5.9.0, 11.17.2, 15.0.3 and 24.43.1).

    python scripts/render_comment.py [--tools DIR] [--out DIR] [--docs]

Writes OUT/comment-{light,dark}.png (as posted), OUT/comment-{light,dark}-open.png (every
<details> opened), OUT/comment-{light,dark}-details.png (the first one, opened) and
OUT/pr-comment.md (the text posted); --docs copies the light pair docs/action.md shows to
docs/img/.
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
H200_REAL = ROOT / "tests" / "data" / "h200" / "real"
WORKFLOW = ROOT / ".github" / "workflows" / "perfgate-comment.yml"
# The screenshots docs/action.md shows: OUT's name -> docs/img's.
DOCS = {
    "comment-light.png": "pr-comment-matrix.png",
    "comment-light-details.png": "pr-comment-matrix-details.png",
}

# Runs the workflow's script with stand-ins for `core`, `github` and `context`: the pull
# request is at the commit and in the repository the run tested, and has no comment yet.
_SANITIZE = r"""
const script = require("fs").readFileSync(process.argv[2], "utf8");
const core = { failed: null, setFailed(m) { this.failed = m; }, notice() {}, info() {} };
const posted = [];
const head = { sha: process.env.HEAD_SHA, repo: { full_name: process.env.HEAD_REPO } };
const github = {
  rest: {
    pulls: { get: async () => ({ data: { head } }) },
    issues: {
      listComments: null,
      updateComment: async (a) => { posted.push(a.body); },
      createComment: async (a) => { posted.push(a.body); return { data: { html_url: "u" } }; },
    },
  },
  paginate: async () => [],
};
const context = { repo: { owner: "o", repo: "r" } };
const run = new Function("require", "core", "github", "context", "process",
  "return (async () => {" + script + "})();");
run(require, core, github, context, process).then(() => {
  console.log(JSON.stringify({ failed: core.failed, posted }));
});
"""

_RENDER = r"""
const fs = require("fs");
const path = require("path");
const MarkdownIt = require("markdown-it");
const puppeteer = require("puppeteer-core");
const [commentFile, tools, out] = process.argv.slice(2);
const md = new MarkdownIt({ html: true });
const fence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, i, opts, env, self) =>
  tokens[i].info.trim() === "mermaid"
    ? `<pre class="mermaid">${md.utils.escapeHtml(tokens[i].content)}</pre>`
    : fence(tokens, i, opts, env, self);
const modules = path.join(tools, "node_modules");
const css = (theme) => path.join(modules, "github-markdown-css", `github-markdown-${theme}.css`);
const mermaidJs = path.join(modules, "mermaid", "dist", "mermaid.min.js");
const COLORS = {
  light: { bg: "#ffffff", border: "#d0d7de", head: "#f6f8fa", fg: "#1f2328", muted: "#59636e" },
  dark: { bg: "#0d1117", border: "#3d444d", head: "#151b23", fg: "#f0f6fc", muted: "#9198a1" },
};

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--allow-file-access-from-files"],
  });
  const body = md.render(fs.readFileSync(commentFile, "utf8"));
  const report = {};
  for (const theme of ["light", "dark"]) {
    const c = COLORS[theme];
    const html = `<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="file://${css(theme)}">
<style>
body { background: ${c.bg}; margin: 0; padding: 16px; font-family: -apple-system,
  BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
.comment { width: 900px; border: 1px solid ${c.border}; border-radius: 6px; overflow: hidden; }
.comment-head { background: ${c.head}; border-bottom: 1px solid ${c.border}; color: ${c.muted};
  font-size: 14px; padding: 8px 16px; }
.comment-head b { color: ${c.fg}; }
.comment-head span { border: 1px solid ${c.border}; border-radius: 2em; font-size: 12px;
  padding: 0 7px; margin: 0 4px; }
.markdown-body { box-sizing: border-box; padding: 16px; }
pre.mermaid { background: transparent; }
</style>
<script src="file://${mermaidJs}"></script></head>
<body><div class="comment"><div class="comment-head"><b>github-actions</b><span>bot</span>
commented</div><article class="markdown-body">${body}</article></div>
<script>
// mermaid lays a chart out only where it is shown: draw them opened, then fold every block
// back as GitHub shows the comment.
const folded = [...document.querySelectorAll("details")].filter((d) => !d.open);
for (const d of folded) d.open = true;
mermaid.initialize({ startOnLoad: false, theme: "${theme === "dark" ? "dark" : "default"}" });
mermaid.run().then(() => {
  for (const d of folded) d.open = false;
  document.body.dataset.done = "1";
}, (e) => {
  document.body.dataset.done = "error: " + (e && e.message ? e.message : JSON.stringify(e));
});
</script></body></html>`;
    const page = path.join(out, `comment-${theme}.html`);
    fs.writeFileSync(page, html);
    const tab = await browser.newPage();
    await tab.setViewport({ width: 934, height: 800, deviceScaleFactor: 1 });
    await tab.goto("file://" + page);
    await tab.waitForFunction("document.body.dataset.done", { timeout: 60000 });
    const done = await tab.evaluate(() => document.body.dataset.done);
    if (done !== "1") throw new Error(`mermaid: ${done}`);
    // What a reviewer reads: no tag may show as text, every folded block is a real one.
    report[theme] = await tab.evaluate(() => ({
      details: document.querySelectorAll("article details").length,
      summaries: document.querySelectorAll("article details > summary").length,
      charts: document.querySelectorAll("article pre.mermaid svg").length,
      tagsAsText: (document.querySelector("article").innerText.match(/<\/?[a-z]+[^>]*>/g) || []),
    }));
    const comment = await tab.$(".comment");
    await comment.screenshot({ path: path.join(out, `comment-${theme}.png`) });
    await tab.evaluate(() => {
      for (const d of document.querySelectorAll("details")) d.open = true;
    });
    await comment.screenshot({ path: path.join(out, `comment-${theme}-open.png`) });
    // The first kernel's block, opened: its findings, evidence and stall chart.
    const box = await tab.evaluate(() => {
      const r = document.querySelector("article details").getBoundingClientRect();
      return { x: r.left + window.scrollX - 16, y: r.top + window.scrollY - 8,
               width: r.width + 32, height: r.height + 16 };
    });
    await tab.screenshot({ path: path.join(out, `comment-${theme}-details.png`), clip: box,
                           captureBeyondViewport: true });
    await tab.close();
  }
  await browser.close();
  console.log(JSON.stringify(report));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def _perfgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", "--no-color", "-q", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )


def _job(work: Path, gpu: str, capture: Path, expect: int) -> Path:
    """One matrix job: a workspace holding the repository's baselines/ and the job's capture
    at the Action's `capture-output`, checked as the Action checks it; returns the folder its
    artifact `perfgate-gpu-GPU` holds (pr-comment.md, junit.xml)."""
    space = work / gpu
    shutil.copytree(work / "baselines", space / "baselines")
    (space / "perfgate-report").mkdir()
    shutil.copyfile(capture, space / "perfgate-report" / "capture.csv")
    proc = _perfgate(
        space,
        "check",
        "-b",
        f"baselines/{gpu}/",
        "-c",
        "perfgate-report/capture.csv",
        "--pr-comment",
        "perfgate-report/pr-comment.md",
        "--junit",
        "perfgate-report/junit.xml",
    )
    if proc.returncode != expect:
        raise SystemExit(
            f"{gpu}: expected exit {expect}, got {proc.returncode}:\n{proc.stdout}{proc.stderr}"
        )
    artifact = work / f"perfgate-gpu-{gpu}"
    shutil.copytree(space / "perfgate-report", artifact)
    return artifact


def merged_comment(work: Path) -> str:
    """The comment the report job of the GPU matrix writes (steps 1 and 2)."""
    (work / "baselines" / "h100").mkdir(parents=True)
    (work / "baselines" / "h200").mkdir()
    shutil.copyfile(
        ROOT / "baselines" / "h100" / "zoo.yaml", work / "baselines" / "h100" / "zoo.yaml"
    )
    runs = [a for i in (1, 2, 3) for a in ("-c", str(H200_REAL / f"torch-flash-run{i}.csv"))]
    proc = _perfgate(work, "baseline", "record", *runs, "-o", "baselines/h200/torch.yaml")
    if proc.returncode != 0:
        raise SystemExit(f"record: {proc.stderr}")
    jobs = [
        _job(work, "h100", ROOT / "tests" / "data" / "h100" / "zoo-bad-short-run1.csv", expect=1),
        _job(work, "h200", H200_REAL / "start2-torch-flash-run1.csv", expect=0),
    ]
    merged = work / "merged"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "merge_reports.py"),
            "--out",
            str(merged),
            *map(str, jobs),
        ],
        check=True,
        capture_output=True,
    )
    return (merged / "pr-comment.md").read_text()


def sanitized(body: str, work: Path) -> str:
    """What perfgate-comment.yml posts for `body` (step 3); exits when it posts nothing."""
    import yaml

    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is not installed")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    step = next(
        s for s in workflow["jobs"]["comment"]["steps"] if "github-script" in s.get("uses", "")
    )
    (work / "sanitizer.js").write_text(step["with"]["script"])
    (work / "harness.js").write_text(_SANITIZE)
    artifact = work / "artifact"
    artifact.mkdir(exist_ok=True)
    (artifact / "pr-number").write_text("7\n")
    (artifact / "pr-comment.md").write_text(body)
    env = {**os.environ, "COMMENT_DIR": str(artifact), "HEAD_SHA": "abc", "HEAD_REPO": "me/fork"}
    proc = subprocess.run(
        [node, str(work / "harness.js"), str(work / "sanitizer.js")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["failed"] or len(result["posted"]) != 1:
        raise SystemExit(f"the comment workflow posted nothing: {result['failed']}")
    posted: str = result["posted"][0]
    if "&lt;" in posted:
        raise SystemExit(
            "the sanitizer escaped a tag of the comment: a reviewer would see it as text"
        )
    return posted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", default="/work/render-tools", help="npm packages' folder")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "perfgate-comment"))
    parser.add_argument(
        "--docs", action="store_true", help="copy the screenshots docs/action.md shows"
    )
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        posted = sanitized(merged_comment(work), work)
        (out / "pr-comment.md").write_text(posted)
        (work / "render.js").write_text(_RENDER)
        env = {**os.environ, "NODE_PATH": str(Path(args.tools) / "node_modules")}
        proc = subprocess.run(
            [
                shutil.which("node") or "node",
                str(work / "render.js"),
                str(out / "pr-comment.md"),
                args.tools,
                str(out),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"render: {proc.stderr}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for theme, seen in report.items():
        print(
            f"{theme}: {seen['details']} <details> ({seen['summaries']} with a summary), "
            f"{seen['charts']} stall charts drawn, "
            f"tags shown as text: {seen['tagsAsText'] or 'none'}"
        )
        if seen["tagsAsText"] or seen["details"] != posted.count("<details>"):
            raise SystemExit(f"{theme}: the comment does not render as written")
    if args.docs:
        for source, name in DOCS.items():
            shutil.copyfile(out / source, ROOT / "docs" / "img" / name)
    for png in sorted(out.glob("*.png")):
        print(png)


if __name__ == "__main__":
    main()
