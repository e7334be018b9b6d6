#!/usr/bin/python3
"""A stand-in for systemd-logind's sleep inhibitors, for tests: owns org.freedesktop.login1 on the
bus it is started on (a private session bus) and answers Manager.Inhibit(what, who, why, mode) the
way logind does — with a file descriptor the caller holds for as long as it wants sleep blocked.
It keeps the other end of that pipe and records, as JSON lines, each call and the moment the
caller's descriptor is closed (the inhibitor released):

    {"ready": true}
    {"inhibit": {"what": "sleep", "who": "Nightshift", "why": "...", "mode": "block"}, "id": 1}
    {"released": 1}

It also says the machine is about to sleep and has woken, as logind's PrepareForSleep signal does:
SIGUSR1 sends PrepareForSleep(true), SIGUSR2 PrepareForSleep(false), each logged once sent:

    {"prepare_for_sleep": true}

    logind.py OUT.jsonl

Needs Debian's python3-dbus and python3-gi (/usr/bin/python3).
"""
import json
import os
import signal
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

OUT = sys.argv[1]


def log(obj):
    with open(OUT, "a") as f:
        f.write(json.dumps(obj) + "\n")


class Manager(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/login1")
        self.count = 0

    @dbus.service.method("org.freedesktop.login1.Manager", in_signature="ssss", out_signature="h")
    def Inhibit(self, what, who, why, mode):
        self.count += 1
        n = self.count
        log({"inhibit": {"what": str(what), "who": str(who), "why": str(why), "mode": str(mode)}, "id": n})
        read_end, write_end = os.pipe()

        # The caller's end closed (released, or its process gone): the read end sees EOF.
        def closed(fd, _cond):
            log({"released": n})
            os.close(fd)
            return False

        GLib.io_add_watch(read_end, GLib.IO_HUP | GLib.IO_ERR | GLib.IO_IN, closed)
        handed = dbus.types.UnixFd(write_end)
        os.close(write_end)
        return handed

    @dbus.service.signal("org.freedesktop.login1.Manager", signature="b")
    def PrepareForSleep(self, start):
        pass


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
name = dbus.service.BusName("org.freedesktop.login1", bus)
manager = Manager(bus)


def prepare_for_sleep(start):
    def send():
        manager.PrepareForSleep(dbus.Boolean(start))
        log({"prepare_for_sleep": start})
        return True

    return send


GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR1, prepare_for_sleep(True))
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGUSR2, prepare_for_sleep(False))
log({"ready": True})
GLib.MainLoop().run()
