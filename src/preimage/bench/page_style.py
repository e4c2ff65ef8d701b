"""The style sheet every page of the benchmark report shares."""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1280px;
color:#1d2433;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
.wide{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border-bottom:1px solid #dde2ea;padding:.35rem .6rem;text-align:right}
td{white-space:nowrap}th{background:#f4f6fa;vertical-align:bottom;max-width:9rem}
th:first-child,td:first-child{text-align:left}
.yes{color:#0b7a3b;font-weight:600}.no{color:#b3261e;font-weight:600}
.full{color:#0b7a3b}.part{color:#7a5a00}.none{color:#b3261e}.na{color:#8a93a3}
img{max-width:100%;border:1px solid #dde2ea;margin:.5rem 0}
table.totals td{white-space:normal;min-width:3.5rem}
.dmg{color:#5b6577;font-style:italic}.rw{color:#5b4fc7;font-weight:600}
dl.defs{font-size:.85rem;color:#3b4456;display:grid;grid-template-columns:max-content 1fr;
gap:.15rem 1rem;margin:.5rem 0}dl.defs dt{font-weight:600}dl.defs dd{margin:0}
.muted{color:#5b6577}ul{font-size:.9rem}code{background:#f4f6fa;padding:0 .2rem}
"""
