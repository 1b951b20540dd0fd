package org.kafkachaos;

import org.kafkachaos.contract.Json;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the harness asks of a running workload through a small JSON file in run_dir/control/ (workloads/control.py):
 * re-read only when the file changes (its mtime or, after an atomic rename, its inode); absent means nothing asked.
 */
final class ControlFile {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final Path path;
    private Object seen;
    private JsonNode value;

    ControlFile(Path path) {
        this.path = path;
    }

    static Path path(String runDir, String name) {
        return Path.of(runDir, "control", name + ".json");
    }

    /** The file's JSON, null when there is none; a half-written file keeps the last value (read again next time). */
    JsonNode read() {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            seen = null;
            value = null;
            return null;
        } catch (IOException e) {
            return value;
        }
        Object stamp = Arrays.asList(attributes.lastModifiedTime().to(TimeUnit.NANOSECONDS), attributes.fileKey(),
                attributes.size());
        if (!stamp.equals(seen)) {
            try {
                value = MAPPER.readTree(path.toFile());
            } catch (IOException e) {
                return value;
            }
            seen = stamp;
        }
        return value;
    }

    /** Written whole or not at all (control.py write_atomically): a reader never sees half a file. */
    static void writeAtomically(Path path, Map<String, Object> data) throws IOException {
        Files.createDirectories(path.toAbsolutePath().getParent());
        String name = path.getFileName().toString();
        Path tmp = path.resolveSibling(name.substring(0, name.lastIndexOf('.')) + ".tmp");
        Files.writeString(tmp, Json.write(data));
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
