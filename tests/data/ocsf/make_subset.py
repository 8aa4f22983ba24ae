#!/usr/bin/env python3
"""Cuts the subset of the OCSF schema the export test needs out of a checkout of
github.com/ocsf/ocsf-schema (run once when the schema is updated; see README.md).

usage: make_subset.py SCHEMA_CHECKOUT OUT_DIR
"""
import json
import os
import shutil
import sys

CLASSES = ["events/base_event.json", "events/network/network.json", "events/network/http_activity.json",
           "events/network/network_activity.json", "events/network/dns_activity.json",
           "events/findings/finding.json", "events/findings/detection_finding.json"]
# The objects the export writes (and what they extend).
OBJECTS = ["metadata", "product", "network_endpoint", "http_request", "http_response", "url", "network_traffic",
           "network_connection_info", "dns_query", "finding_info", "analytic", "evidences"]


def main():
    src, out = sys.argv[1:]
    names = {}
    for f in os.listdir(os.path.join(src, "objects")):
        with open(os.path.join(src, "objects", f)) as fh:
            names[json.load(fh)["name"]] = "objects/" + f
    files, todo = set(), list(CLASSES) + [names[o] for o in OBJECTS]
    while todo:
        rel = todo.pop()
        if rel in files:
            continue
        files.add(rel)
        with open(os.path.join(src, rel)) as fh:
            d = json.load(fh)
        todo += d.get("attributes", {}).get("$include", [])
        parent = d.get("extends")
        if parent and rel.startswith("objects/") and parent in names:
            todo.append(names[parent])
    attributes = set()
    for rel in files:
        with open(os.path.join(src, rel)) as fh:
            attributes |= set(json.load(fh).get("attributes", {})) - {"$include"}
    with open(os.path.join(src, "dictionary.json")) as fh:
        dictionary = json.load(fh)
    dictionary["attributes"] = {k: v for k, v in dictionary["attributes"].items() if k in attributes}
    if os.path.exists(out):
        shutil.rmtree(out)
    for rel in sorted(files) + ["categories.json", "version.json", "LICENSE"]:
        os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
        shutil.copy(os.path.join(src, rel), os.path.join(out, rel))
    with open(os.path.join(out, "dictionary.json"), "w") as fh:
        json.dump(dictionary, fh, indent=2)
        fh.write("\n")
    print("\n".join(sorted(files)))


if __name__ == "__main__":
    main()
