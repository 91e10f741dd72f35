/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.bookkeeper.mledger.impl;

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import java.io.File;
import java.net.URL;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import org.testng.annotations.Test;

/** The bench runs the patched classes from the drop-in jar, not upstream's and not loose classes. */
public class DropInJarIdentityTest {

    @Test(groups = FORK_ONLY)
    public void patchedCursorComesFromTheDropInJar() throws Exception {
        URL cursorJar = ManagedCursorImpl.class.getProtectionDomain().getCodeSource().getLocation();
        File file = new File(cursorJar.toURI());
        String line = System.getProperty("pulsar.line");
        assertEquals(file.getName(), "org.apache.pulsar-managed-ledger-" + line + ".jar");
        try (JarFile jar = new JarFile(file)) {
            Attributes manifest = jar.getManifest().getMainAttributes();
            assertEquals(manifest.getValue("Pulsar-Fork-Upstream"), "org.apache.pulsar:managed-ledger:" + line);
            assertNotEquals(manifest.getValue("Pulsar-Fork-Patch-Series"), "none");
        }
        // Only the patched ManagedCursorImpl has this field.
        ManagedCursorImpl.class.getDeclaredField("markDeleteQueue");
        assertEquals(MarkDeleteQueue.class.getProtectionDomain().getCodeSource().getLocation(), cursorJar);
        assertEquals(ManagedLedgerImpl.class.getProtectionDomain().getCodeSource().getLocation(), cursorJar);
    }

    @Test(groups = FORK_ONLY)
    public void patchedReplicationProducerComesFromTheDropInJar() throws Exception {
        Class<?> producer = Class.forName("org.apache.pulsar.client.impl.GeoReplicationProducerImpl");
        URL clientJar = producer.getProtectionDomain().getCodeSource().getLocation();
        String line = System.getProperty("pulsar.line");
        assertEquals(new File(clientJar.toURI()).getName(),
                "org.apache.pulsar-pulsar-client-original-" + line + ".jar");
        // Only the patched producer has this field.
        producer.getDeclaredField("rejectedBeforeDedup");
        assertEquals(Class.forName("org.apache.pulsar.client.impl.ProducerImpl").getProtectionDomain().getCodeSource()
                .getLocation(), clientJar);
    }
}
