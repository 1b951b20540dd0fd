package org.kafkachaos.contract;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * An append-only JSONL history file (workloads/history.py JsonlLog): rows wait in memory until {@link #flush()},
 * which hands them to the OS in one write, so a flushed row survives a killed process and an unflushed one never
 * reaches the file, not even in part.
 *
 * <p>{@link #kill()} is what a killed process does to its log: the rows not yet flushed are gone and nothing more
 * is ever written. Every method is synchronized, so once kill() returns (on the host's control thread) the member's
 * thread can write nothing more: each append and flush says whether it was written, and a member sends a commit
 * only after its {@code commit_sent} was.
 */
public final class JsonlLog {
    private final FileOutputStream out;
    private final StringBuilder pending = new StringBuilder();
    private boolean closed;
    private boolean killed;

    public JsonlLog(Path path) {
        try {
            Files.createDirectories(path.toAbsolutePath().getParent());
            dropUnterminatedTail(path);
            out = new FileOutputStream(path.toFile(), true);  // O_APPEND
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** False when the log takes no more rows (killed or closed). */
    public synchronized boolean append(Map<String, Object> row) {
        if (closed) {
            return false;
        }
        Json.write(pending, row);
        pending.append('\n');
        return true;
    }

    public synchronized boolean extend(List<Map<String, Object>> rows) {
        if (closed) {
            return false;
        }
        for (Map<String, Object> row : rows) {
            Json.write(pending, row);
            pending.append('\n');
        }
        return true;
    }

    /** To the OS (survives a killed process, not a lost host). False when nothing can be written any more. */
    public synchronized boolean flush() {
        if (closed) {
            return false;
        }
        if (pending.length() > 0) {
            try {
                out.write(pending.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            pending.setLength(0);
        }
        return true;
    }

    /** An append and a flush as one step: the row is in the file, or (killed) never will be. */
    public synchronized boolean write(Map<String, Object> row) {
        return append(row) && flush();
    }

    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            flush();
        } finally {
            closed = true;
            closeQuietly();
        }
    }

    /** As a killed process leaves it: what was not flushed is lost, and nothing more is written. */
    public synchronized void kill() {
        killed = true;
        pending.setLength(0);
        if (!closed) {
            closed = true;
            closeQuietly();
        }
    }

    public synchronized boolean killed() {
        return killed;
    }

    private void closeQuietly() {
        try {
            out.close();
        } catch (IOException ignored) {
            // a file we only append to: nothing is lost by a failed close after a flush
        }
    }

    /**
     * A process killed while writing can leave half a line; nothing that depended on it (a commit) happened, so a
     * restarted writer drops the fragment instead of appending after it (history.py drop_unterminated_tail).
     */
    public static void dropUnterminatedTail(Path path) throws IOException {
        if (!Files.exists(path)) {
            return;
        }
        try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
            long end = file.length();
            long keep = end;
            byte[] chunk = new byte[1 << 16];
            while (keep > 0) {
                long start = Math.max(0, keep - chunk.length);
                int size = (int) (keep - start);
                file.seek(start);
                file.readFully(chunk, 0, size);
                int newline = -1;
                for (int i = size - 1; i >= 0; i--) {
                    if (chunk[i] == '\n') {
                        newline = i;
                        break;
                    }
                }
                if (newline >= 0) {
                    keep = start + newline + 1;
                    break;
                }
                keep = start;
            }
            if (keep != end) {
                file.setLength(keep);
            }
        }
    }
}
