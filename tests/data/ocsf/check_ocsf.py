#!/usr/bin/env python3
"""Checks OCSF records (one JSON object per line) against the OCSF schema's own files.

usage: check_ocsf.py SCHEMA_DIR RECORDS.jsonl [--used FILE]

For each record: its class (class_uid = category uid * 1000 + the class's uid) is looked up
in SCHEMA_DIR/events, with what it extends and the profiles it includes merged in, as the
schema's compiler does; then every required attribute must be present, every attribute
must be one the class (or object) defines, its type must be the dictionary's (integers,
strings, booleans, objects checked recursively against SCHEMA_DIR/objects, arrays where the
dictionary says is_array), every *_id with an enum must hold one of its values,
type_uid must be class_uid * 100 + activity_id, and the class's at_least_one constraints
must hold. Prints one line per problem; exit 1 if any, else prints the classes checked.
--used FILE writes the schema files it read (to cut the committed subset).
"""
import json
import os
import sys

USED = set()


def load(root, rel):
    USED.add(rel)
    with open(os.path.join(root, rel)) as f:
        return json.load(f)


def merge(base, over):
    """Attribute definitions: the later (the subclass's) wins key by key; enums add up."""
    out = dict(base)
    for k, v in over.items():
        if k == "enum" and isinstance(out.get("enum"), dict):
            e = dict(out["enum"])
            e.update(v)
            out["enum"] = e
        else:
            out[k] = v
    # An attribute is a profile's only while every definition of it comes from a profile.
    if "_profile" not in over or (base and "_profile" not in base):
        out.pop("_profile", None)
    return out


def attributes_of(root, definition):
    """The attributes of an event class or object, with its includes merged in."""
    attrs = {}
    for inc in definition.get("attributes", {}).get("$include", []):
        included = load(root, inc)
        for k, v in attributes_of(root, included).items():
            if included.get("meta") == "profile":
                v = dict(v, _profile=included["name"])
            attrs[k] = merge(attrs.get(k, {}), v)
    for k, v in definition.get("attributes", {}).items():
        if k != "$include":
            attrs[k] = merge(attrs.get(k, {}), v)
    return attrs


def resolve(root, folder, name, index):
    """A class or object with its `extends` chain merged: (attributes, constraints)."""
    rel = index[name]
    d = load(root, rel)
    attrs, constraints = {}, {}
    parent = d.get("extends")
    if parent and parent in index:
        attrs, constraints = resolve(root, folder, parent, index)
        attrs = {k: dict(v) for k, v in attrs.items()}
    for k, v in attributes_of(root, d).items():
        attrs[k] = merge(attrs.get(k, {}), v)
    constraints = dict(constraints)
    constraints.update(d.get("constraints", {}))
    return attrs, constraints


def index_of(root, folder):
    out = {}
    for dirpath, _, files in os.walk(os.path.join(root, folder)):
        for f in files:
            if f.endswith(".json"):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                with open(os.path.join(root, rel)) as fh:
                    out[json.load(fh)["name"]] = rel
    return out


class Checker:
    def __init__(self, root):
        self.root = root
        self.dictionary = load(root, "dictionary.json")
        self.types = self.dictionary["types"]["attributes"]
        self.events = index_of(root, "events")
        self.objects = index_of(root, "objects")
        self.categories = load(root, "categories.json")["attributes"]
        self.classes = {}  # class_uid -> (name, category uid)
        for name in self.events:
            d = self.raw_event(name)
            category = self.category_of(name)
            if "uid" in d and category in self.categories:
                uid = self.categories[category]["uid"]
                self.classes[uid * 1000 + d["uid"]] = (name, uid)
        self.problems = []
        self.profiles = ()  # the record's metadata.profiles

    def raw_event(self, name):
        with open(os.path.join(self.root, self.events[name])) as f:
            return json.load(f)

    def category_of(self, name):
        """A class's category, its own or the one of the class it extends."""
        while name in self.events:
            d = self.raw_event(name)
            if d.get("category"):
                return d["category"]
            name = d.get("extends")
        return None

    def base_type(self, t):
        while t in self.types and self.types[t].get("type"):
            t = self.types[t]["type"]
        return t

    def check_value(self, where, name, definition, value):
        dict_entry = self.dictionary["attributes"].get(name)
        if dict_entry is None:
            self.problems.append(f"{where}: {name} is not in the dictionary")
            return
        full = merge(dict_entry, definition)
        t = full.get("type")
        if full.get("is_array"):
            if not isinstance(value, list):
                self.problems.append(f"{where}: {name} should be an array")
                return
            for i, v in enumerate(value):
                self.check_scalar(f"{where}[{i}]", name, full, t, v)
        else:
            self.check_scalar(where, name, full, t, value)

    def check_scalar(self, where, name, full, t, value):
        if t == "object" or t == "json_t":
            if t == "object" and not isinstance(value, dict):
                self.problems.append(f"{where}: {name} should be an object")
            return
        if t in self.objects:
            if not isinstance(value, dict):
                self.problems.append(f"{where}: {name} should be an object of type {t}")
                return
            self.check_object(where, t, value)
            return
        base = self.base_type(t)
        ok = {
            "integer_t": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "long_t": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "float_t": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean_t": lambda v: isinstance(v, bool),
            "string_t": lambda v: isinstance(v, str),
        }.get(base, lambda v: isinstance(v, str))
        if not ok(value):
            self.problems.append(f"{where}: {name} = {value!r} is not a {t} ({base})")
            return
        if t == "port_t" and not 0 <= value <= 65535:
            self.problems.append(f"{where}: {name} = {value} is not a port")
        if t == "timestamp_t" and value < 10**12:
            self.problems.append(f"{where}: {name} = {value} is not milliseconds since the epoch")
        if t == "ip_t":
            import ipaddress
            try:
                ipaddress.ip_address(value)
            except ValueError:
                self.problems.append(f"{where}: {name} = {value!r} is not an IP address")
        enum = full.get("enum")
        if enum and name.endswith("_id") and str(value) not in enum:
            self.problems.append(f"{where}: {name} = {value} is not one of {sorted(enum, key=int)}")

    def check_attributes(self, where, attrs, constraints, value):
        # A profile's attributes are the class's only when the record names the profile.
        attrs = {k: d for k, d in attrs.items() if d.get("_profile") in (None, *self.profiles)}
        for k, d in attrs.items():
            if d.get("requirement") == "required" and k not in value:
                self.problems.append(f"{where}: required attribute {k} is missing")
        for k, v in value.items():
            if k not in attrs:
                self.problems.append(f"{where}: {k} is not an attribute here")
                continue
            self.check_value(f"{where}.{k}", k, attrs[k], v)
        for group in constraints.get("at_least_one", []) and [constraints["at_least_one"]]:
            if not any(k in value for k in group):
                self.problems.append(f"{where}: none of {group} is present")
        for group in constraints.get("just_one", []) and [constraints["just_one"]]:
            if sum(k in value for k in group) != 1:
                self.problems.append(f"{where}: not exactly one of {group}")

    def check_object(self, where, name, value):
        attrs, constraints = resolve(self.root, "objects", name, self.objects)
        self.check_attributes(where, attrs, constraints, value)

    def check_record(self, where, record):
        uid = record.get("class_uid")
        if uid not in self.classes:
            self.problems.append(f"{where}: class_uid {uid} is no class of the schema")
            return None
        name, category = self.classes[uid]
        self.profiles = tuple((record.get("metadata") or {}).get("profiles") or ())
        attrs, constraints = resolve(self.root, "events", name, self.events)
        # class_uid, category_uid and type_uid are fixed by the class.
        if record.get("category_uid") != category:
            self.problems.append(f"{where}: category_uid {record.get('category_uid')} is not {category} ({name})")
        activity = record.get("activity_id")
        if record.get("type_uid") != uid * 100 + (activity if isinstance(activity, int) else -1):
            self.problems.append(f"{where}: type_uid {record.get('type_uid')} is not class_uid * 100 + activity_id")
        attrs = dict(attrs)
        for fixed in ("class_uid", "category_uid"):
            attrs[fixed] = {k: v for k, v in attrs[fixed].items() if k != "enum"}
        self.check_attributes(f"{where} ({name})", attrs, constraints, record)
        return name


def main():
    args = sys.argv[1:]
    used_out = None
    if "--used" in args:
        i = args.index("--used")
        used_out = args[i + 1]
        del args[i : i + 2]
    root, path = args
    c = Checker(root)
    seen = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            name = c.check_record(f"line {n}", json.loads(line))
            if name:
                seen[name] = seen.get(name, 0) + 1
    if used_out:
        with open(used_out, "w") as f:
            f.write("\n".join(sorted(USED)) + "\n")
    for p in c.problems:
        print(p)
    print("classes: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items())))
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main())
