"""Who a GPU process works for: the Slurm job, the Kubernetes pod, the container.

The driver reports host PIDs only. A process's cgroup (``/proc/PID/cgroup``, cgroup v1 or v2)
names what it runs in; :func:`parse_cgroup` reads the ids from it. A cgroup path is only as
trustworthy as whoever could create it: systemd delegates each user's ``user@UID.service``
subtree to that user, who can create ``.../slurm/job_4242/step_0`` or ``docker-<id>.scope`` under
it. So each form is believed only where it lives, anchored at the start of the path (or right
after a container it is nested in), never found anywhere in it:

- Slurm: ``/slurm/uid_1000/job_4242/step_0/task_0`` (cgroup v1, the task/cgroup plugin's
  hierarchy at the root of each controller; ``/slurm_NODE/...`` for a multi-slurmd node) and
  ``/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0`` (cgroup v2, the scope the
  cgroup/v2 plugin creates; ``NODE_slurmstepd.scope``): job ``4242``, step ``0`` (or ``batch``,
  ``extern`` ...).
- Kubernetes: ``/kubepods[/besteffort|/burstable]/pod<uid>/<container-id>`` (cgroupfs driver),
  ``/kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid>.slice/
  cri-containerd-<id>.scope`` (systemd driver, the UID's dashes written as ``_``; ``crio-`` and
  ``docker-`` too; the same under ``/kubelet.slice/kubelet-kubepods.slice``); guaranteed pods
  have no QoS level, static pods a 32-hex UID.
- Containers: ``/system.slice/docker-<id>.scope`` and ``/docker/<id>`` (Docker),
  ``/system.slice/cri-containerd-<id>.scope`` and ``/system.slice/containerd.service/<ns>/<id>``
  (containerd), ``/system.slice/crio-<id>.scope`` (CRI-O), ``/machine.slice/libpod-<id>.scope``
  and ``/libpod_parent/libpod-<id>`` (Podman). ``*-conmon-<id>`` scopes are the runtime's
  monitor, not the container. Inside a job's cgroup a container id anywhere is believed (only
  root creates cgroups there); inside a container's, the forms above are read again (a
  Kubernetes node in a container, slurmd in a pod).
- ``/user.slice/user-UID.slice/user@UID.service/...`` is at most that user's own thing: never a
  Slurm job or a pod, and a container there (``libpod-<id>.scope``, ``docker-<id>.scope``) only
  for a process owned by UID (rootless Podman or Docker), as runtime ``rootless podman`` /
  ``rootless docker``, whose name is not looked up in the system engines' state (another
  container's name must not be lent to it).
- gputui in a cgroup namespace of its own (a container's default on cgroup v2, ``--pid=host``
  or not) sees other processes' paths relative to its own cgroup: ``/../../system.slice/...``.
  With as many ``..`` as its namespace root lies deep (told from PID 1's cgroup, the host's
  init), what follows is the absolute path, read as above; with fewer, the process lives under
  gputui's own ancestors (its container's parent slice: root's), and the forms are looked for
  in what follows, as they are inside a job; a relative path is not believed otherwise.

Names come from the engines' own state where this user can read it (:class:`AttributionReader`):
Docker's ``containers/<id>/config.v2.json`` (``Name``, and the pod's labels under a Docker-based
kubelet); the OCI bundle ``config.json`` of containerd (``<tasks>/<namespace>/<id>/``) and CRI-O
(``overlay-containers/<id>/userdata/``), whose annotations carry the pod name, namespace and
container name; Podman's ``overlay-containers/containers.json``; and the kubelet's
``pods/<uid>/etc-hosts``, whose last line is the pod's hostname (normally the pod name; the
namespace when the pod has a subdomain). Every root is a parameter, so tests build fake trees.

A PID's cgroup does not change while it lives: callers cache the :class:`Attribution` per process
(:class:`gputui.host.processes.ProcessEnricher` keeps it with the process's other static facts), and
the reader caches names per container and per pod, so a steady state reads no file at all.
"""

from __future__ import annotations

import os
import re
from typing import Any

from gputui.core.frozen import frozen
from gputui.core.model import MAX_NAME_CHARS

MAX_STATE_BYTES = 4 << 20
"""An engine state file larger than this is not read (a real one is a few tens of kB)."""
MAX_CACHED = 4096
"""Names kept per kind (containers, pods) before the cache starts over."""

_HEX64 = "[0-9a-f]{64}"
_END = "(?=/|$)"
_QOS = "(?:besteffort|burstable)"
_UID = "[0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32}"
_USER_TREE = re.compile(r"/user\.slice/user-(\d+)\.slice/user@(\d+)\.service" + _END)
_SLURM = re.compile(
    r"/(?:slurm(?:_[^/]+)?/uid_\d+|system\.slice/(?:[^/]+_)?slurmstepd\.scope)"
    r"/job_(\d+)(?:/step_([^/]+))?" + _END
)
_PODS = tuple(
    re.compile(form)
    for form in (
        rf"/kubepods(?:/{_QOS})?/pod({_UID}){_END}",
        rf"/kubepods\.slice(?:/kubepods-{_QOS}\.slice)?/kubepods(?:-{_QOS})?-pod({_UID})\.slice"
        + _END,
        r"/kubelet\.slice/kubelet-kubepods\.slice(?:/kubelet-kubepods-" + _QOS + r"\.slice)?"
        rf"/kubelet-kubepods(?:-{_QOS})?-pod({_UID})\.slice{_END}",
    )
)
_POD_CONTAINER = re.compile(rf"/(?:(cri-containerd|crio|docker)-)?({_HEX64})(?:\.scope)?{_END}")
_CONTAINERS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(rf"/system\.slice/docker-({_HEX64})\.scope{_END}"), "docker"),
    (re.compile(rf"/docker/({_HEX64}){_END}"), "docker"),
    (re.compile(rf"/system\.slice/cri-containerd-({_HEX64})\.scope{_END}"), "containerd"),
    (re.compile(rf"/system\.slice/containerd\.service/[^/]+/({_HEX64}){_END}"), None),
    (re.compile(rf"/system\.slice/crio-({_HEX64})\.scope{_END}"), "cri-o"),
    (re.compile(rf"/machine\.slice/libpod-({_HEX64})\.scope{_END}"), "podman"),
    (re.compile(rf"/libpod_parent/libpod-({_HEX64}){_END}"), "podman"),
)
_ROOTLESS_SCOPE = re.compile(rf"/(libpod|docker)-({_HEX64})\.scope{_END}")
"""A rootless Podman or Docker container (systemd cgroup manager) in its user's subtree."""
_MAX_NESTED = 4
"""Containers in containers read (a Kubernetes node in a Docker container is two)."""
_CONTAINER_ID = re.compile(
    r"(cri-containerd|containerd|docker|crio|libpod)[-/:]([0-9a-f]{64})(?![0-9a-f])"
)
_BARE_ID = re.compile(r"/([0-9a-f]{64})(?:\.scope)?$")
_SLURM_JOB = re.compile(r"/job_(\d+)(?:/step_([^/]+))?" + _END)
_POD_UID = re.compile(rf"pod({_UID})(?=\.slice|/|$)")
_UP = "/.."
ROOTLESS = "rootless "
"""How the runtime of a user's own container begins: ``rootless podman``."""
_RUNTIMES = {
    "docker": "docker",
    "cri-containerd": "containerd",
    "containerd": "containerd",
    "crio": "cri-o",
    "libpod": "podman",
}
_K8S_MANAGED = "# Kubernetes-managed hosts file"


@frozen
class Attribution:
    """What a process runs in. Every field is None when not known."""

    slurm_job_id: str | None = None
    slurm_step: str | None = None
    k8s_pod_uid: str | None = None
    k8s_pod_name: str | None = None
    k8s_namespace: str | None = None
    container_id: str | None = None
    container_runtime: str | None = None
    container_name: str | None = None

    @property
    def empty(self) -> bool:
        return self.slurm_job_id is None and self.k8s_pod_uid is None and not self.container_id


NOTHING = Attribution()


def cgroup_paths(text: str) -> list[str]:
    """The paths of a ``/proc/PID/cgroup`` file: ``0::/path`` (v2), ``4:memory:/path`` (v1)."""
    return [path for _hierarchy, path in _cgroup_lines(text)]


def _cgroup_lines(text: str) -> list[tuple[str, str]]:
    """(hierarchy id, path) of each line of a ``/proc/PID/cgroup`` file."""
    lines = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2]:
            lines.append((parts[0], parts[2].strip()))
    return lines


def namespace_depths(init_cgroup: str) -> dict[str, int]:
    """How deep gputui's cgroup namespace root lies in each hierarchy, from PID 1's cgroup file
    (the host's init, at the top: ``0::/../../init.scope`` is 2 deep); all 0 on the host."""
    depths = {}
    for hierarchy, path in _cgroup_lines(init_cgroup):
        depth = 0
        while path.startswith(_UP, depth * len(_UP)):
            depth += 1
        depths[hierarchy] = depth
    return depths


def parse_cgroup(
    text: str, owner_uid: int | None = None, ns_depths: dict[str, int] | None = None
) -> Attribution:
    """The ids a cgroup file names (see the module doc for the forms and where each is
    believed); no names (those need the engines' state, :class:`AttributionReader`).
    ``owner_uid``: the process's (real) user id; without it nothing under a user's
    ``user@UID.service`` counts. ``ns_depths``: :func:`namespace_depths` where gputui runs in a
    cgroup namespace of its own; without it a relative path (``/../...``) counts for nothing."""
    job = step = pod = cid = runtime = None
    for hierarchy, path in _cgroup_lines(text):
        found = _parse_path(path, owner_uid, (ns_depths or {}).get(hierarchy))
        if job is None and found.slurm_job_id is not None:
            job, step = found.slurm_job_id, found.slurm_step
        if pod is None:
            pod = found.k8s_pod_uid
        if cid is None and found.container_id is not None:
            cid, runtime = found.container_id, found.container_runtime
    return Attribution(
        slurm_job_id=job,
        slurm_step=step,
        k8s_pod_uid=pod,
        container_id=cid,
        container_runtime=runtime,
    )


def is_rootless(runtime: str | None) -> bool:
    """Whether ``runtime`` names a user's own container (see :data:`ROOTLESS`)."""
    return runtime is not None and runtime.startswith(ROOTLESS)


def _parse_path(path: str, owner_uid: int | None, ns_depth: int | None) -> Attribution:
    up = 0
    while path.startswith(_UP, up * len(_UP)):
        up += 1
    if up:  # outside gputui's cgroup namespace: relative to its root
        if ns_depth is None or up > ns_depth:
            return NOTHING
        path = path[up * len(_UP) :] or "/"
        if up < ns_depth:  # under gputui's own ancestors, which root made
            return _loose(path)
    user = _USER_TREE.match(path)
    if user is None:
        return _system(path, 0, 0)
    uid = int(user.group(1))
    if owner_uid is None or uid != owner_uid or int(user.group(2)) != uid:
        return NOTHING  # somebody's own subtree: it proves nothing about this process
    match = _ROOTLESS_SCOPE.search(path, user.end())
    if match is None:
        return NOTHING
    return Attribution(
        container_id=match.group(2), container_runtime=ROOTLESS + _RUNTIMES[match.group(1)]
    )


def _system(path: str, at: int, depth: int) -> Attribution:
    """The forms of the module doc, anchored at ``path[at:]`` (the start of the path, or where
    the container it is nested in ends)."""
    slurm = _SLURM.match(path, at)
    if slurm is not None:
        inside = _container_of(path[slurm.end() :])  # only root creates cgroups in a job's
        cid, runtime = inside if inside is not None else (None, None)
        return Attribution(
            slurm.group(1), slurm.group(2), container_id=cid, container_runtime=runtime
        )
    pod = cid = runtime = None
    end: int | None = None
    for form in _PODS:
        match = form.match(path, at)
        if match is not None:
            pod = match.group(1).replace("_", "-")
            container = _POD_CONTAINER.match(path, match.end())
            if container is not None:
                cid, runtime = container.group(2), _RUNTIMES.get(container.group(1) or "")
                end = container.end()
            break
    else:
        for form, engine in _CONTAINERS:
            match = form.match(path, at)
            if match is not None:
                cid, runtime, end = match.group(1), engine, match.end()
                break
    here = Attribution(k8s_pod_uid=pod, container_id=cid, container_runtime=runtime)
    if end is None or end == len(path) or depth >= _MAX_NESTED:
        return here
    inner = _system(path, end, depth + 1)  # a node, a pod or a job inside the container
    return Attribution(
        slurm_job_id=inner.slurm_job_id,
        slurm_step=inner.slurm_step,
        k8s_pod_uid=inner.k8s_pod_uid or pod,
        container_id=inner.container_id or cid,
        container_runtime=inner.container_runtime if inner.container_id else runtime,
    )


def _loose(path: str) -> Attribution:
    """The forms found anywhere in ``path``: a job, a pod, a container (for a path where only
    root creates cgroups)."""
    job = _SLURM_JOB.search(path) if "slurm" in path else None
    pod = _POD_UID.search(path) if "kubepods" in path else None
    cid, runtime = _container_of(path) or (None, None)
    return Attribution(
        slurm_job_id=job.group(1) if job else None,
        slurm_step=job.group(2) if job else None,
        k8s_pod_uid=pod.group(1).replace("_", "-") if pod else None,
        container_id=cid,
        container_runtime=runtime,
    )


def _container_of(path: str) -> tuple[str, str | None] | None:
    match = _CONTAINER_ID.search(path)
    if match:
        return match.group(2), _RUNTIMES[match.group(1)]
    match = _BARE_ID.search(path)
    if match:
        runtime = "docker" if "/docker/" in path else None
        return match.group(1), runtime
    return None


@frozen
class Roots:
    """Where the reader looks (each a parameter, so tests point them at a fake tree)."""

    proc: str = "/proc"
    docker: str = "/var/lib/docker"
    kubelet: str = "/var/lib/kubelet"
    containerd_tasks: str = "/run/containerd/io.containerd.runtime.v2.task"
    """containerd's runtime v2 task directories: ``<this>/<namespace>/<id>/config.json``."""
    containers_storage: tuple[str, ...] = ("/run/containers/storage", "/var/lib/containers/storage")
    """CRI-O's and Podman's storage (run root, then root)."""


@frozen
class _ContainerFacts:
    name: str | None = None
    pod_name: str | None = None
    namespace: str | None = None
    pod_uid: str | None = None


@frozen
class _PodFacts:
    name: str | None = None
    namespace: str | None = None


class AttributionReader:
    """Reads a process's attribution: its cgroup, then names from the engines' state. Names are
    cached per container id and pod UID (including "not readable"), so each state file is read
    once. Not thread-safe: one caller (the sampler's thread)."""

    def __init__(
        self,
        proc_root: str | None = None,
        *,
        docker_root: str | None = None,
        kubelet_root: str | None = None,
        containerd_tasks: str | None = None,
        containers_storage: tuple[str, ...] | None = None,
    ) -> None:
        defaults = Roots()
        self.roots = Roots(
            proc=proc_root or defaults.proc,
            docker=docker_root or defaults.docker,
            kubelet=kubelet_root or defaults.kubelet,
            containerd_tasks=containerd_tasks or defaults.containerd_tasks,
            containers_storage=(
                defaults.containers_storage if containers_storage is None else containers_storage
            ),
        )
        self._containers: dict[str, _ContainerFacts] = {}
        self._pods: dict[str, _PodFacts] = {}
        self._podman_names: dict[str, str] | None = None
        self._ns_depths: dict[str, int] | None = None
        self.files_read = 0
        """State and cgroup files opened so far (for tests and measurements)."""

    def cgroup_text(self, pid: int) -> str | None:
        try:
            with open(f"{self.roots.proc}/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
                self.files_read += 1
                return f.read(65536)
        except OSError:
            return None

    def read(self, pid: int, owner_uid: int | None = None) -> Attribution:
        """The attribution of ``pid``, whose real user id is ``owner_uid`` (None: not known; a
        user's own subtree then counts for nothing); :data:`NOTHING` when its cgroup cannot be
        read."""
        text = self.cgroup_text(pid)
        if text is None:
            return NOTHING
        if self._ns_depths is None:  # where gputui's cgroup namespace lies, once
            init = self.cgroup_text(1)
            self._ns_depths = {} if init is None else namespace_depths(init)
        return self.complete(parse_cgroup(text, owner_uid, self._ns_depths))

    def complete(self, ids: Attribution) -> Attribution:
        """``ids`` with the names this node shows (container name, pod name and namespace)."""
        if ids.empty or is_rootless(ids.container_runtime):  # its engine's state is the user's
            return ids
        container = self._container(ids.container_id, ids.container_runtime, ids.k8s_pod_uid)
        pod_uid = ids.k8s_pod_uid or container.pod_uid
        pod_name, namespace = container.pod_name, container.namespace
        if pod_uid is not None and (pod_name is None or namespace is None):
            pod = self._pod(pod_uid)
            pod_name = pod_name or pod.name
            namespace = namespace or pod.namespace
        return Attribution(
            slurm_job_id=ids.slurm_job_id,
            slurm_step=ids.slurm_step,
            k8s_pod_uid=pod_uid,
            k8s_pod_name=pod_name,
            k8s_namespace=namespace,
            container_id=ids.container_id,
            container_runtime=ids.container_runtime,
            container_name=container.name,
        )

    # -- containers ------------------------------------------------------------------------------

    def _container(self, cid: str | None, runtime: str | None, pod: str | None) -> _ContainerFacts:
        if cid is None:
            return _ContainerFacts()
        found = self._containers.get(cid)
        if found is None:
            found = self._read_container(cid, runtime, in_pod=pod is not None)
            if len(self._containers) >= MAX_CACHED:
                self._containers.clear()
            self._containers[cid] = found
        return found

    def _read_container(self, cid: str, runtime: str | None, *, in_pod: bool) -> _ContainerFacts:
        readers = {
            "docker": self._docker,
            "containerd": self._containerd,
            "cri-o": self._crio,
            "podman": self._podman,
        }
        if runtime in readers:
            order = [readers[runtime]]
        else:  # a bare id: any engine may own it
            order = [self._containerd, self._crio, self._docker]
            if not in_pod:
                order.append(self._podman)
        for reader in order:
            facts = reader(cid)
            if facts is not None:
                return facts
        return _ContainerFacts()

    def _json(self, path: str) -> Any:
        try:
            with open(path, "rb") as f:
                self.files_read += 1
                data = f.read(MAX_STATE_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_STATE_BYTES:
            return None
        import json  # a container runtime's state file: most nodes have none

        try:
            return json.loads(data)
        except ValueError:
            return None

    def _docker(self, cid: str) -> _ContainerFacts | None:
        data = self._json(os.path.join(self.roots.docker, "containers", cid, "config.v2.json"))
        if not isinstance(data, dict):
            return None
        raw = data.get("Name")
        name = _text(raw.lstrip("/") if isinstance(raw, str) else None)
        config = data.get("Config")
        labels = config.get("Labels") if isinstance(config, dict) else None
        labels = labels if isinstance(labels, dict) else {}
        k8s_container = _text(labels.get("io.kubernetes.container.name"))
        return _ContainerFacts(
            name=k8s_container or name,
            pod_name=_text(labels.get("io.kubernetes.pod.name")),
            namespace=_text(labels.get("io.kubernetes.pod.namespace")),
            pod_uid=_text(labels.get("io.kubernetes.pod.uid")),
        )

    def _containerd(self, cid: str) -> _ContainerFacts | None:
        root = self.roots.containerd_tasks
        try:
            namespaces = sorted(os.listdir(root))
        except OSError:
            return None
        for namespace in namespaces:
            facts = self._oci_bundle(os.path.join(root, namespace, cid, "config.json"))
            if facts is not None:
                return facts
        return None

    def _crio(self, cid: str) -> _ContainerFacts | None:
        for root in self.roots.containers_storage:
            path = os.path.join(root, "overlay-containers", cid, "userdata", "config.json")
            facts = self._oci_bundle(path)
            if facts is not None:
                return facts
        return None

    def _oci_bundle(self, path: str) -> _ContainerFacts | None:
        """Names from an OCI runtime spec's annotations (containerd's CRI plugin, CRI-O,
        nerdctl)."""
        data = self._json(path)
        if not isinstance(data, dict):
            return None
        notes = data.get("annotations")
        notes = notes if isinstance(notes, dict) else {}

        def first(*keys: str) -> str | None:
            for key in keys:
                value = _text(notes.get(key))
                if value:
                    return value
            return None

        return _ContainerFacts(
            name=first(
                "io.kubernetes.cri.container-name", "io.kubernetes.container.name", "nerdctl/name"
            ),
            pod_name=first("io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name"),
            namespace=first("io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace"),
            pod_uid=first("io.kubernetes.cri.sandbox-uid", "io.kubernetes.pod.uid"),
        )

    def _podman(self, cid: str) -> _ContainerFacts | None:
        if self._podman_names is None:
            self._podman_names = {}
            for root in reversed(self.roots.containers_storage):
                path = os.path.join(root, "overlay-containers", "containers.json")
                data = self._json(path)
                for entry in data if isinstance(data, list) else ():
                    if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                        names = entry.get("names")
                        if isinstance(names, list) and names and isinstance(names[0], str):
                            self._podman_names[entry["id"]] = names[0][:MAX_NAME_CHARS]
        name = self._podman_names.get(cid)
        if name is None:
            self._podman_names = None  # a container started since: read the list again next time
            return None
        return _ContainerFacts(name=name)

    # -- pods ------------------------------------------------------------------------------------

    def pod_name(self, uid: str) -> tuple[str | None, str | None]:
        """The pod's (name, namespace) as this node shows them (None: not shown)."""
        pod = self._pod(uid)
        return pod.name, pod.namespace

    def _pod(self, uid: str) -> _PodFacts:
        found = self._pods.get(uid)
        if found is None:
            found = self._read_pod(uid)
            if len(self._pods) >= MAX_CACHED:
                self._pods.clear()
            self._pods[uid] = found
        return found

    def _read_pod(self, uid: str) -> _PodFacts:
        """The pod's hostname from the kubelet's ``etc-hosts`` (the last line: ``IP  name`` or,
        with a subdomain, ``IP  name.sub.namespace.svc.domain  name``). A host-network pod's file
        is the node's own hosts file: it names no pod."""
        path = os.path.join(self.roots.kubelet, "pods", uid, "etc-hosts")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                self.files_read += 1
                text = f.read(65536)
        except OSError:
            return _PodFacts()
        lines = [line.strip() for line in text.splitlines()]
        if not lines or not lines[0].startswith(_K8S_MANAGED) or "host network" in lines[0]:
            return _PodFacts()
        entries = [line.split() for line in lines if line and not line.startswith("#")]
        if not entries or len(entries[-1]) < 2:
            return _PodFacts()
        last = entries[-1]
        name = last[-1][:MAX_NAME_CHARS]
        namespace = None
        for word in last[1:-1]:
            parts = word.split(".")
            if len(parts) >= 4 and parts[0] == name and parts[3] == "svc":
                namespace = parts[2][:MAX_NAME_CHARS]
        return _PodFacts(name=name, namespace=namespace)


def _text(value: object) -> str | None:
    """A name from an engine's state: stripped, at most :data:`MAX_NAME_CHARS` characters."""
    if isinstance(value, str) and value.strip():
        return value.strip()[:MAX_NAME_CHARS]
    return None


__all__ = [
    "MAX_CACHED",
    "NOTHING",
    "ROOTLESS",
    "Attribution",
    "AttributionReader",
    "Roots",
    "cgroup_paths",
    "is_rootless",
    "namespace_depths",
    "parse_cgroup",
]
