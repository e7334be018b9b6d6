#!/usr/bin/python3
"""A real org.freedesktop.Notifications server for tests: owns the name on the session bus it is
started on and records every Notify call as one JSON line (app_name, summary, body, icon, actions,
hints, timeout).

    notification_server.py record OUT.jsonl   answer every call
    notification_server.py hang   OUT.jsonl   record, but never reply (a hung server)
    notification_server.py refuse:N OUT.jsonl  answer the first N calls with an error, then record
    notification_server.py open   OUT.jsonl   record, answer, and half a second later click the
                                              notification's "Open" (the ActionInvoked signal)

In every mode the test may click a notification's "Open" itself, when it chooses, by calling
dev.nightshift.TestServer.ClickOpen(u id) on /org/freedesktop/Notifications (ids count from 1),
or any of its actions with dev.nightshift.TestServer.Click(u id, s action) ("approve", "deny").

It writes {"ready": true} as its first line once it owns the name. Needs Debian's python3-dbus and
python3-gi (/usr/bin/python3, not a pyenv python).
"""
import json
import time
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

MODE, OUT = sys.argv[1], sys.argv[2]
IFACE = "org.freedesktop.Notifications"


def plain(v):
    if isinstance(v, (dbus.Byte, dbus.Int16, dbus.Int32, dbus.Int64, dbus.UInt16, dbus.UInt32, dbus.UInt64)):
        return int(v)
    if isinstance(v, dbus.Boolean):
        return bool(v)
    if isinstance(v, (dbus.Array, list)):
        return [plain(x) for x in v]
    if isinstance(v, (dbus.Dictionary, dict)):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (dbus.Struct, tuple)):
        return [plain(x) for x in v]
    return str(v)


def write(record):
    with open(OUT, "a") as f:
        f.write(json.dumps(record) + "\n")


class Server(dbus.service.Object):
    def __init__(self, bus):
        self.bus_name = dbus.service.BusName(IFACE, bus, do_not_queue=True)
        super().__init__(self.bus_name, "/org/freedesktop/Notifications")
        self.count = 0
        self.refused = 0

    @dbus.service.method(IFACE, in_signature="susssasa{sv}i", out_signature="u", async_callbacks=("ok", "err"))
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, timeout, ok, err):
        if MODE.startswith("refuse:") and self.refused < int(MODE.split(":")[1]):
            self.refused += 1
            write({"refused": self.refused})
            err(dbus.exceptions.DBusException("refused for the test", name="org.freedesktop.Notifications.Error.Refused"))
            return
        self.count += 1
        write({"t": time.time(), "app_name": str(app_name), "replaces": int(replaces_id), "summary": str(summary), "body": str(body), "icon": str(app_icon),
               "actions": plain(actions), "hints": {k: plain(v) for k, v in hints.items() if k != "image-data"},
               "timeout": int(timeout)})
        if MODE != "hang":
            # A notification that replaces another keeps its id, as servers answer.
            ok(dbus.UInt32(int(replaces_id) or self.count))
        if MODE == "open" and "open" in [str(a) for a in actions]:
            nid = self.count
            GLib.timeout_add(500, lambda: self.ActionInvoked(dbus.UInt32(nid), "open") or False)

    @dbus.service.method("dev.nightshift.TestServer", in_signature="u", out_signature="")
    def ClickOpen(self, nid):
        self.ActionInvoked(dbus.UInt32(nid), "open")

    @dbus.service.method("dev.nightshift.TestServer", in_signature="us", out_signature="")
    def Click(self, nid, action):
        self.ActionInvoked(dbus.UInt32(nid), str(action))

    @dbus.service.signal(IFACE, signature="us")
    def ActionInvoked(self, nid, action):
        write({"clicked": int(nid), "action": str(action)})

    @dbus.service.method(IFACE, in_signature="", out_signature="as")
    def GetCapabilities(self):
        return ["actions", "body", "icon-static"]

    @dbus.service.method(IFACE, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("nightshift-test-server", "nightshift", "1.0", "1.2")

    @dbus.service.method(IFACE, in_signature="u", out_signature="")
    def CloseNotification(self, nid):
        pass


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
server = Server(dbus.SessionBus())
write({"ready": True})
GLib.MainLoop().run()
