#!/usr/bin/python3
"""A real StatusNotifier host for tests: owns org.kde.StatusNotifierWatcher on the session bus it
is started on (as a desktop's panel does), so the app's tray icon registers with it over D-Bus
instead of falling back to an X11 tray, and writes the tray as the desktop sees it — every
registered item with its menu (com.canonical.dbusmenu), as one JSON object per line, again each
time the menu or the icon changes:

    {"t": 1796040000.123, "service": ":1.5", "path": "/org/ayatana/...", "menu_path": "/MenuBar",
     "title": "...", "menu": [{"id": 3, "label": "Run now", "children": [{"label": "hello"}, ...]}, ...]}

("t": when it was read, seconds since the epoch; "id": the dbusmenu item id, for clicking an entry
with com.canonical.dbusmenu.Event.)

    status_notifier_host.py OUT.jsonl

It writes {"ready": true} as its first line once it owns the name. Needs Debian's python3-dbus
and python3-gi (/usr/bin/python3).
"""
import json
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

OUT = sys.argv[1]
WATCHER = "org.kde.StatusNotifierWatcher"
ITEM = "org.kde.StatusNotifierItem"
MENU = "com.canonical.dbusmenu"


def write(obj):
    with open(OUT, "a") as f:
        f.write(json.dumps(obj) + "\n")


def entries(layout):
    """dbusmenu layout (id, props, children) → [{"label", "enabled", "checked", "children"}], separators left out."""
    out = []
    for child in layout[2]:
        item_id, props, _children = child
        if props.get("type") == "separator":
            continue
        if not props.get("visible", True):
            continue
        # GTK mnemonics: "_Open" shows as "Open", "my__job" as "my_job".
        label = str(props.get("label", ""))
        label = label.replace("__", "\0").replace("_", "", 1).replace("\0", "_")
        entry = {"id": int(item_id), "label": label}
        entry["enabled"] = bool(props.get("enabled", True))
        entry["checked"] = int(props.get("toggle-state", 0)) == 1
        kids = entries(child)
        if kids:
            entry["children"] = kids
        out.append(entry)
    return out


class Watcher(dbus.service.Object):
    def __init__(self, bus):
        self.bus = bus
        self.items = []
        super().__init__(bus, "/StatusNotifierWatcher")

    @dbus.service.method(WATCHER, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        # Items pass either their bus name or their object path.
        path = service if service.startswith("/") else "/StatusNotifierItem"
        name = sender if service.startswith("/") else service
        self.items.append((name, path))
        write({"t": time.time(), "registered": f"{name}{path}"})
        self.StatusNotifierItemRegistered(f"{name}{path}")
        GLib.timeout_add(100, self.dump_later, name, path)
        for signal in ("NewIcon", "NewToolTip", "NewTitle", "NewStatus"):
            self.bus.add_signal_receiver(lambda *a, n=name, p=path: self.dump(n, p), signal_name=signal, dbus_interface=ITEM, bus_name=name, path=path)

    @dbus.service.method(WATCHER, in_signature="s", out_signature="")
    def RegisterStatusNotifierHost(self, service):
        pass

    @dbus.service.signal(WATCHER, signature="s")
    def StatusNotifierItemRegistered(self, service):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        return self.GetAll(interface)[prop]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {
            "RegisteredStatusNotifierItems": dbus.Array([f"{n}{p}" for n, p in self.items], signature="s"),
            "IsStatusNotifierHostRegistered": dbus.Boolean(True),
            "ProtocolVersion": dbus.Int32(0),
        }

    def dump_later(self, name, path):
        self.dump(name, path)
        try:
            props = self.bus.get_object(name, path).GetAll(ITEM, dbus_interface=dbus.PROPERTIES_IFACE)
            menu_path = props.get("Menu")
            if menu_path:
                self.bus.add_signal_receiver(lambda *a, n=name, p=path: self.dump(n, p), signal_name="LayoutUpdated", dbus_interface=MENU, bus_name=name, path=menu_path)
                self.bus.add_signal_receiver(lambda *a, n=name, p=path: self.dump(n, p), signal_name="ItemsPropertiesUpdated", dbus_interface=MENU, bus_name=name, path=menu_path)
        except dbus.DBusException as e:
            write({"error": str(e)})
        return False

    def dump(self, name, path):
        try:
            item = self.bus.get_object(name, path)
            props = item.GetAll(ITEM, dbus_interface=dbus.PROPERTIES_IFACE)
            record = {"t": time.time(), "service": name, "path": path, "title": str(props.get("Title", "")), "status": str(props.get("Status", ""))}
            tooltip = props.get("ToolTip")
            if tooltip is not None and len(tooltip) >= 4:
                record["tooltip"] = f"{tooltip[2]} {tooltip[3]}".strip()
            menu_path = props.get("Menu")
            if menu_path:
                record["menu_path"] = str(menu_path)
                _rev, layout = self.bus.get_object(name, menu_path).GetLayout(0, -1, dbus.Array([], signature="s"), dbus_interface=MENU)
                record["menu"] = entries(layout)
            write(record)
        except dbus.DBusException as e:
            write({"error": str(e)})


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    watcher = Watcher(bus)
    name = dbus.service.BusName(WATCHER, bus)
    write({"ready": True})
    GLib.MainLoop().run()
    del watcher, name


main()
