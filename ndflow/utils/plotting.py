"""Pictures as PNG files, drawn on matplotlib's Agg canvas (never a window, whatever backend
pyplot uses, and no pyplot state touched): loss curves, and figures the examples draw."""
import os
import sys


def new_figure(width=6.0, height=4.0, what="the figure"):
    """A matplotlib `Figure` on its own Agg canvas, or None, with a message on stderr naming
    `what` is not drawn, when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        print(f"(matplotlib is not installed: {what} is not drawn; pip install matplotlib)",
              file=sys.stderr)
        return None
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path):
    """Lay out `fig` and save it as `path` (PNG; its directory is created). Returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def save_loss_curve(losses, path, title="training loss", xlabel="step", ylabel="loss",
                    log=None, series=None):
    """Draw `losses` (a sequence of numbers; or several, given as `series={label: values}`)
    against their index and save the picture as `path` (PNG; its directory is created).
    `log=None` picks a log scale when the values are positive and span more than a factor of
    100. Returns the path, or None with a message on stderr when matplotlib is not installed."""
    fig = new_figure(what=f"the loss curve {os.path.basename(path)}")
    if fig is None:
        return None
    curves = dict(series) if series is not None else {"loss": losses}
    values = [float(v) for vs in curves.values() for v in vs]
    if log is None:
        log = bool(values) and min(values) > 0 and max(values) > 100 * min(values)
    ax = fig.add_subplot(111)
    for label, vs in curves.items():
        ax.plot(range(1, len(vs) + 1), [float(v) for v in vs], label=label, linewidth=1.2)
    if log:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, alpha=0.3)
    if len(curves) > 1:
        ax.legend()
    return save_figure(fig, path)
