#!/usr/bin/python3
"""Ask the X window titled TITLE to close, as a window manager's close button does
(WM_PROTOCOLS / WM_DELETE_WINDOW client message). Used to close the app's window under Xvfb, where
no window manager runs. Needs Debian's python3-xlib. Exit 1 if no such window."""
import sys

from Xlib import X, display, protocol

title = sys.argv[1]
d = display.Display()
root = d.screen().root


def find(w):
    try:
        name = w.get_wm_name()
        if name == title and w.get_wm_protocols() is not None:
            return w
    except Exception:
        pass
    for child in w.query_tree().children:
        hit = find(child)
        if hit is not None:
            return hit
    return None


w = find(root)
if w is None:
    sys.exit(1)
wm_protocols = d.intern_atom("WM_PROTOCOLS")
wm_delete = d.intern_atom("WM_DELETE_WINDOW")
ev = protocol.event.ClientMessage(window=w, client_type=wm_protocols, data=(32, [wm_delete, X.CurrentTime, 0, 0, 0]))
w.send_event(ev, event_mask=X.NoEventMask)
d.flush()
