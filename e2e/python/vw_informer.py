"""Follows Cowboys across workspaces through an APIExport virtual workspace with the official
Kubernetes Python client, as a provider's informer would.

Usage: vw_informer.py <kubeconfig> <virtual workspace URL> <workspace URL> <other workspace URL>

Lists Cowboys at <virtual workspace URL>/clusters/*, watches from the list's resourceVersion,
and meanwhile creates, changes and deletes Cowboys in the two workspaces directly. Prints one
JSON document of what it listed and saw; the Rust test asserts on it.
"""

import json
import sys
import threading

from kubernetes import client, config, watch

GROUP, VERSION, PLURAL = "wildwest.dev", "v1alpha1", "cowboys"


def api_at(kubeconfig, host):
    api_client = config.new_client_from_config(config_file=kubeconfig)
    api_client.configuration.host = host
    return client.CustomObjectsApi(api_client)


def seen(obj):
    meta = obj["metadata"]
    return [meta.get("annotations", {}).get("kcp.io/cluster", ""), meta["name"]]


def main():
    kubeconfig, vw_url, one_url, two_url = sys.argv[1:5]
    vw = api_at(kubeconfig, vw_url + "/clusters/*")
    one, two = api_at(kubeconfig, one_url), api_at(kubeconfig, two_url)
    out = {}

    start = vw.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    out["listed"] = sorted(seen(o) for o in start["items"])
    events = []
    ready = threading.Event()

    def follow():
        w = watch.Watch()
        ready.set()
        for ev in w.stream(vw.list_cluster_custom_object, GROUP, VERSION, PLURAL,
                           resource_version=start["metadata"]["resourceVersion"],
                           timeout_seconds=20):
            events.append([ev["type"]] + seen(ev["object"]))
            if ev["type"] == "DELETED":
                w.stop()

    watcher = threading.Thread(target=follow)
    watcher.start()
    ready.wait()

    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Cowboy",
            "metadata": {"name": "py"}, "spec": {"intent": "ride"}}
    one.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    two.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "ann",
                                       {"spec": {"intent": "rest"}})
    one.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py")
    watcher.join(30)
    out["events"] = events
    print(json.dumps(out))


if __name__ == "__main__":
    main()
