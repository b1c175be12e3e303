"""Drives a logical cluster with the official Kubernetes Python client.

Usage: client_walk.py <kubeconfig> <context> <namespace>

Creates a ConfigMap, patches it with every patch type (JSON, merge, strategic, apply), watches
while doing so, reads a custom resource through CustomObjectsApi, and deletes. Prints one JSON
document describing what it saw; the Rust test asserts on it.
"""

import json
import sys
import threading

from kubernetes import client, config, watch


def patch_as(core, content_type, *args, **kwargs):
    """This client picks the patch content type from the body (list: JSON patch, object:
    strategic merge); merge and apply patches need the header chosen explicitly."""
    chooser = core.api_client.select_header_content_type
    core.api_client.select_header_content_type = lambda *_: content_type
    try:
        return core.patch_namespaced_config_map(*args, **kwargs)
    finally:
        core.api_client.select_header_content_type = chooser


def main():
    kubeconfig, context, namespace = sys.argv[1:4]
    api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    core = client.CoreV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    out = {}

    start = core.list_namespaced_config_map(namespace)
    events = []
    ready = threading.Event()

    def follow():
        w = watch.Watch()
        ready.set()
        for ev in w.stream(core.list_namespaced_config_map, namespace,
                           resource_version=start.metadata.resource_version,
                           timeout_seconds=20):
            obj = ev["object"]
            if obj.metadata.name != "py":
                continue
            events.append([ev["type"], dict(obj.data or {})])
            if ev["type"] == "DELETED":
                w.stop()

    watcher = threading.Thread(target=follow)
    watcher.start()
    ready.wait()

    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py", labels={"made-by": "python"}),
                              data={"a": "1"})
    created = core.create_namespaced_config_map(namespace, body)
    out["created_rv"] = created.metadata.resource_version

    core.patch_namespaced_config_map(
        "py", namespace, [{"op": "add", "path": "/data/json", "value": "j"}])
    patch_as(core, "application/merge-patch+json", "py", namespace, {"data": {"merge": "m"}})
    core.patch_namespaced_config_map("py", namespace, {"data": {"strategic": "s"}})
    applied = patch_as(
        core, "application/apply-patch+yaml", "py", namespace,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"}, "data": {"apply": "a"}},
        field_manager="python-apply")
    out["after_patches"] = dict(applied.data)
    out["managers"] = sorted({m.manager for m in applied.metadata.managed_fields or []})

    try:
        patch_as(
            core, "application/apply-patch+yaml", "py", namespace,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"},
             "data": {"apply": "conflict"}},
            field_manager="python-other")
        out["conflict_status"] = None
    except client.exceptions.ApiException as e:
        out["conflict_status"] = e.status

    try:
        core.read_namespaced_config_map("missing", namespace)
    except client.exceptions.ApiException as e:
        out["missing"] = {"status": e.status, "reason": json.loads(e.body)["reason"]}

    widgets = custom.list_namespaced_custom_object("example.com", "v1", namespace, "widgets")
    out["widgets"] = sorted(i["metadata"]["name"] for i in widgets["items"])
    custom.patch_namespaced_custom_object(
        "example.com", "v1", namespace, "widgets", "w1", {"spec": {"size": 9}})
    out["widget_size"] = custom.get_namespaced_custom_object(
        "example.com", "v1", namespace, "widgets", "w1")["spec"]["size"]

    core.delete_namespaced_config_map("py", namespace)
    watcher.join(timeout=30)
    out["events"] = events
    print(json.dumps(out))


if __name__ == "__main__":
    main()
